// Package pinstate owns the host's pinned tool definitions (package pins):
// with pins.enabled, a tool whose
// definition differs from the one recorded in the lock file is hidden from
// the model and its calls are refused (not available) until an operator
// approves the change; with pins.newTools: hide, so is a tool the lock
// file does not know. The check runs with the taint check (host/taint.go): once
// per server snapshot and lock version, so every list refresh is checked
// again and calls only look their tool up.
package pinstate

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/pins"
)

// State is the host's lock file and what it enforces.
type State struct {
	path    string
	enforce bool // pins.enabled
	hideNew bool // pins.newTools: hide

	mu   sync.Mutex // serialises changes to the lock
	lock atomic.Pointer[pins.Lock]
	gen  atomic.Uint64 // bumps when lock changes

	// The lock file is read again when it changes on disk (an operator
	// ran `agenthost pins approve` beside a running host), looked at no
	// more often than every reloadEvery.
	reloadEvery time.Duration
	nextLook    atomic.Int64 // unix nanoseconds
	stamp       atomic.Pointer[fileStamp]
}

// fileStamp identifies a version of the lock file on disk.
type fileStamp struct {
	mod  time.Time
	size int64
}

// pinsReloadEvery is how often a running host looks whether the lock file
// changed.
const pinsReloadEvery = time.Second

// statLock returns the lock file's stamp (zero when it does not exist).
func statLock(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}
}

// maybeReload reads the lock file again when it changed on disk since it
// was last read; an unreadable new version keeps the old one (and is
// logged).
func (p *State) maybeReload(logger *slog.Logger) {
	now := time.Now().UnixNano()
	next := p.nextLook.Load()
	if now < next || !p.nextLook.CompareAndSwap(next, now+int64(p.reloadEvery)) {
		return
	}
	st := statLock(p.path)
	if old := p.stamp.Load(); old != nil && old.mod.Equal(st.mod) && old.size == st.size {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stamp.Store(&st)
	lock, err := pins.Load(p.path)
	if err != nil {
		logger.Error("the pins lock file changed and cannot be read; keeping the pins read before", "path", p.path, "err", err)
		return
	}
	p.lock.Store(lock)
	p.gen.Add(1)
}

// Path is where the lock file of cfg lives: pins.file, else
// agenthost.lock next to the configuration file (the working directory
// when the configuration has no file).
func Path(cfg *config.Config) string {
	if cfg.Pins.File != "" {
		return cfg.Pins.File
	}
	dir := "."
	if cfg.File != "" {
		dir = filepath.Dir(cfg.File)
	}
	return filepath.Join(dir, pins.DefaultFile)
}

// New reads the lock file of cfg.
func New(cfg *config.Config) (*State, error) {
	p := &State{path: Path(cfg), enforce: cfg.Pins.Enabled, hideNew: cfg.Pins.NewTools == config.PinsNewToolsHide}
	lock, err := pins.Load(p.path)
	if err != nil {
		if !p.enforce {
			// Not enforced: an unreadable lock only matters to the pins
			// commands, which report it.
			lock = &pins.Lock{}
		} else {
			return nil, fmt.Errorf("pins.enabled: %w", err)
		}
	}
	p.lock.Store(lock)
	p.gen.Store(1)
	p.reloadEvery = pinsReloadEvery
	st := statLock(p.path)
	p.stamp.Store(&st)
	p.nextLook.Store(time.Now().Add(p.reloadEvery).UnixNano())
	return p, nil
}

// Definition is the pinned part of a catalog tool.
func Definition(ct *mcpconn.CatalogTool) pins.Definition {
	t := ct.Tool
	return pins.Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
		SecureInputSchema: t.SecureInputSchema, Annotations: t.Annotations}
}

// Reasons a pinned check hides a tool.
const (
	ChangedReason = "its definition changed since it was pinned (review: agenthost pins diff; accept: agenthost pins approve SERVER TOOL; docs/cli.md)"
	NewReason     = "it is not pinned yet and pins.newTools is hide (review and pin it: agenthost pins diff, agenthost pins approve SERVER TOOL; docs/cli.md)"
)

// Hidden checks every tool of snap against the lock: nil unless
// pinning is enforced and some tool is changed (or new, under hide).
func (p *State) Hidden(snap *mcpconn.ServerSnapshot) map[*mcpconn.CatalogTool]string {
	if p == nil || !p.enforce {
		return nil
	}
	lock := p.lock.Load()
	var hidden map[*mcpconn.CatalogTool]string
	for _, ct := range snap.Tools {
		reason := ""
		switch lock.Check(snap.Name, Definition(ct)) {
		case pins.Changed:
			reason = ChangedReason
		case pins.New:
			if p.hideNew {
				reason = NewReason
			}
		}
		if reason != "" {
			if hidden == nil {
				hidden = map[*mcpconn.CatalogTool]string{}
			}
			hidden[ct] = reason
		}
	}
	return hidden
}

// Gen is the lock's version (0 without pinning), read again first when the
// file changed on disk.
func (p *State) Gen(logger *slog.Logger) uint64 {
	if !p.Enforced() {
		return 0
	}
	p.maybeReload(logger)
	return p.gen.Load()
}

// SetReloadEvery sets how often the lock file is looked at for a change
// on disk (every pinsReloadEvery unless set), starting now.
func (p *State) SetReloadEvery(d time.Duration) {
	p.reloadEvery = d
	p.nextLook.Store(0)
}

// Enforced reports pins.enabled.
func (p *State) Enforced() bool { return p != nil && p.enforce }

// Change is a tool whose definition is not the pinned one.
type Change struct {
	Server string
	Tool   string
	// New: the tool is not pinned at all; otherwise its definition changed.
	New bool
	// Diff is the readable diff of the pinned definition against the
	// current one (for a new tool: the whole definition, as added lines).
	Diff string
}

// Servers is what the pins commands read of the host: its listings, and
// the names of its servers.
type Servers struct {
	Snapshot func(name string) *mcpconn.ServerSnapshot
	Names    []string
}

// Changes compares the current definitions of the named servers (every
// configured server when none is named) with the lock file, reading it
// anew.
func (p *State) Changes(h Servers, servers ...string) ([]Change, error) {
	lock, err := pins.Load(p.path)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, name := range h.names(servers) {
		snap := h.Snapshot(name)
		if snap == nil {
			return nil, fmt.Errorf("%w: %s", hosterr.ErrUnknownServer, name)
		}
		for _, ct := range snap.Tools {
			def := Definition(ct)
			switch lock.Check(name, def) {
			case pins.Changed:
				e, _ := lock.Entry(name, def.Name)
				out = append(out, Change{Server: name, Tool: def.Name, Diff: pins.Diff(e.Definition, def)})
			case pins.New:
				out = append(out, Change{Server: name, Tool: def.Name, New: true, Diff: pins.Diff(nil, def)})
			}
		}
	}
	return out, nil
}

// Record pins the tools of the named servers (every configured server
// when none is named) that the lock file does not know yet, and returns
// them. Changed definitions are left as they are: approve them with
// Approve after reviewing Changes. Call after Connect; servers that
// could not be listed are skipped and named in the error.
func (p *State) Record(h Servers, servers ...string) (recorded []Change, err error) {
	return p.update(h, servers, func(c Change) bool { return c.New })
}

// Approve accepts the current definitions of the named tools of one
// server (every changed or new tool of it when tools is empty) into the
// lock file, and returns what it accepted.
func (p *State) Approve(h Servers, server string, tools ...string) ([]Change, error) {
	if h.Snapshot(server) == nil {
		return nil, fmt.Errorf("%w: %s", hosterr.ErrUnknownServer, server)
	}
	if len(tools) > 0 {
		snap := h.Snapshot(server)
		for _, t := range tools {
			if snap.Tool(t) == nil {
				return nil, fmt.Errorf("%w: server %s does not list a tool %q", hosterr.ErrToolUnavailable, server, t)
			}
		}
	}
	return p.update(h, []string{server}, func(c Change) bool { return len(tools) == 0 || slices.Contains(tools, c.Tool) })
}

// update pins the current definition of every changed or new tool of
// servers that accept selects, saves the lock file and starts enforcing it.
func (p *State) update(h Servers, servers []string, accept func(Change) bool) ([]Change, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changes, err := p.Changes(h, servers...)
	if err != nil {
		return nil, err
	}
	lock, err := pins.Load(p.path)
	if err != nil {
		return nil, err
	}
	var done []Change
	for _, c := range changes {
		if !accept(c) {
			continue
		}
		if ct := h.Snapshot(c.Server).Tool(c.Tool); ct != nil {
			lock.Pin(c.Server, Definition(ct))
			done = append(done, c)
		}
	}
	var unlisted []string
	for _, name := range h.names(servers) {
		if snap := h.Snapshot(name); snap != nil && snap.Status != mcpconn.StatusConnected {
			unlisted = append(unlisted, name)
		}
	}
	if len(done) > 0 {
		if err := lock.Save(p.path); err != nil {
			return nil, err
		}
		st := statLock(p.path)
		p.stamp.Store(&st)
		p.lock.Store(lock)
		p.gen.Add(1)
	}
	if len(unlisted) > 0 {
		return done, fmt.Errorf("%w: not listed, so not pinned: %v", hosterr.ErrServerUnavailable, unlisted)
	}
	return done, nil
}

// File is the lock file the host reads.
func (p *State) File() string { return p.path }

func (h Servers) names(servers []string) []string {
	if len(servers) > 0 {
		return servers
	}
	return h.Names
}
