// Package taint owns the check of each server's listing for definitions
// that hold a protected value, and for the tools pinning hides.
//
// A server that received secure values can write them into a tool's
// definition (its name, description or inputSchema, as a default or an
// enum member, in any JSON spelling) and send tools/list_changed: the next
// model request would carry them. Such a tool is excluded from every view,
// with a reason that names no value. Masking the value instead would still
// tell the model something (where it sat, how long it was) and leave a
// hostile definition on offer.
//
// The check runs once per server snapshot, redactor version and pins lock
// version (a new listing, a newly registered value, an approved pin),
// never per call: sessions share it, and calls only look their tool up in
// its result.
package taint

import (
	"log/slog"
	"maps"
	"sync"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/pinstate"
	"github.com/agenthost/agenthost/host/internal/verdicts"
)

// Reason is the exclusion reason of a tool whose definition holds a
// protected value.
const Reason = "its definition (name, description or inputSchema) contains a value the host protects; a server must never put secure values in tool definitions"

// Check is the check of one server snapshot against one redactor version
// (read-only).
type Check struct {
	snap    *mcpconn.ServerSnapshot
	version uint64
	// Tainted are the tools whose definition holds a protected value (nil
	// when none is).
	Tainted map[*mcpconn.CatalogTool]bool
	// Pinned are the tools pinning hides, with the reason; pinGen is the
	// lock version they were checked against.
	Pinned map[*mcpconn.CatalogTool]string
	pinGen uint64
	// Gen changes when Tainted or Pinned changes.
	Gen uint64
}

// Checker keeps the latest check of each server.
type Checker struct {
	redactor *bindings.Redactor
	pins     *pinstate.State
	logger   *slog.Logger
	// checks: per server name, its latest *Check; read without a lock,
	// replaced under mu.
	mu     sync.Mutex
	checks sync.Map
}

// New returns a checker of definitions against redactor's values and the
// pins lock.
func New(redactor *bindings.Redactor, pins *pinstate.State, logger *slog.Logger) *Checker {
	return &Checker{redactor: redactor, pins: pins, logger: logger}
}

// Sync brings the check up to date with the servers' snapshots and the
// redactor's values, returning each server's check; its Gen changes
// whenever the server's set of tainted or hidden tools changes.
func (c *Checker) Sync(servers []*mcpconn.ServerSnapshot) map[string]*Check {
	version := c.redactor.Version()
	out := make(map[string]*Check, len(servers))
	for _, snap := range servers {
		out[snap.Name] = c.Of(snap, version)
	}
	return out
}

// Tainted reports whether ct, a tool of snap, is tainted. In the steady
// state it takes no lock: one atomic load and two map reads.
func (c *Checker) Tainted(snap *mcpconn.ServerSnapshot, ct *mcpconn.CatalogTool) bool {
	version := c.redactor.Version()
	if version == 0 {
		return false
	}
	return c.Of(snap, version).Tainted[ct]
}

// PinHidden is the reason ct, a tool of snap, is hidden by pinning, or "".
func (c *Checker) PinHidden(snap *mcpconn.ServerSnapshot, ct *mcpconn.CatalogTool) string {
	if !c.pins.Enforced() {
		return ""
	}
	return c.Of(snap, c.redactor.Version()).Pinned[ct]
}

// Of returns the check of snap under version, running it when the
// snapshot or the values changed since the last one.
func (c *Checker) Of(snap *mcpconn.ServerSnapshot, version uint64) *Check {
	pinGen := c.pins.Gen(c.logger)
	if st := c.Current(snap.Name); st != nil && st.snap == snap && st.version == version && st.pinGen == pinGen {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.Current(snap.Name)
	if st != nil && st.snap == snap && st.version == version && st.pinGen == pinGen {
		return st // another goroutine ran it meanwhile
	}
	next := &Check{snap: snap, version: version, Tainted: c.taintedTools(snap, version), Pinned: c.pins.Hidden(snap), pinGen: pinGen}
	switch {
	case st == nil:
		next.Gen = 1
	case st.snap == snap && maps.Equal(st.Tainted, next.Tainted) && maps.Equal(st.Pinned, next.Pinned):
		next.Gen = st.Gen
	default:
		next.Gen = st.Gen + 1
	}
	c.checks.Store(snap.Name, next)
	return next
}

// Current is the latest check of a server (nil before the first).
func (c *Checker) Current(server string) *Check {
	if v, ok := c.checks.Load(server); ok {
		return v.(*Check)
	}
	return nil
}

// taintedTools checks every definition of snap against the redactor's
// values as of version. A definition's answer is kept with it (its
// verdicts, carried to the next listing while its bytes are unchanged), so
// a re-listing checks only the definitions that changed, until a value is
// added.
func (c *Checker) taintedTools(snap *mcpconn.ServerSnapshot, version uint64) map[*mcpconn.CatalogTool]bool {
	if c.redactor.Len() == 0 {
		return nil
	}
	var tainted map[*mcpconn.CatalogTool]bool
	for _, ct := range snap.Tools {
		if verdicts.Tainted(c.redactor, ct, version) {
			if tainted == nil {
				tainted = map[*mcpconn.CatalogTool]bool{}
			}
			tainted[ct] = true
		}
	}
	return tainted
}
