// Package secureargs owns the secure values of a call: resolved by the
// binder after the gate allowed the call, coerced and validated against
// the tool's secureInputSchema, encoded for secureArguments and its
// parameter headers, and kept per tool definition while the bound values
// stay the same (Cache).
package secureargs

import (
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/secureparams"
)

// MaxPrepared bounds a session's prepared calls (one per tool definition
// called); beyond it the cache is cleared.
const MaxPrepared = 256

// Cache is a session's last prepared secure values per tool definition
// (*secureparams.Tool -> *preparedCall), at most MaxPrepared of them.
type Cache struct {
	m sync.Map
	n atomic.Int64
}

// Clear drops every prepared call.
func (c *Cache) Clear() {
	c.m.Clear()
	c.n.Store(0)
}

// Len is how many prepared calls the cache holds.
func (c *Cache) Len() int {
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	return n
}

// Prepare coerces and validates the secure values the binder resolved
// for t (a tool with secureInputSchema, whose value schema is schema) and
// encodes them for the call of server; the values prepared before are
// reused while they are the same. Errors are *hosterr.Error of
// KindBinding. The binder is asked by the caller: Prepare takes no
// context and blocks on nothing.
func (c *Cache) Prepare(server string, t *secureparams.Tool, schema *secureparams.ValueSchema, resolved map[string]bindings.Resolved) (*mcpconn.SecureArgs, error) {
	// Bound values rarely change between calls: reuse the prepared values
	// (coerced, validated, encoded) while they are the same.
	if v, ok := c.m.Load(t); ok {
		if p := v.(*preparedCall); p.matches(resolved) {
			return p.secure, nil
		}
	}
	values := make(map[string]any, len(resolved))
	for name, r := range resolved {
		v, err := schema.Coerce(name, r.Value)
		if err != nil {
			return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
		}
		values[name] = v
	}
	values = secureparams.Select(values, t)
	if values == nil {
		values = map[string]any{}
	}
	if err := schema.Validate(values); err != nil {
		return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, err, "%s/%s: secure value does not match secureInputSchema: %v", server, t.Name, err)
	}
	headers, err := secureparams.ParamHeaders(t, values)
	if err != nil {
		return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	secure, err := mcpconn.NewSecureArgs(t.Name, values, headers)
	if err != nil {
		return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, hosterr.ErrRedactedEncoding, "%s/%s: %v", server, t.Name, hosterr.ErrRedactedEncoding)
	}
	if _, replaced := c.m.Swap(t, newPreparedCall(resolved, secure)); !replaced && c.n.Add(1) > MaxPrepared {
		// Keyed by definition: a server that keeps changing its tools
		// would grow a long session without bound. Start over.
		c.Clear()
	}
	return secure, nil
}

// preparedCall is a session's last prepared secure values for one tool
// definition, with the resolved values they were prepared from. Keyed by
// the parsed definition (a pointer): a changed definition is a new key.
type preparedCall struct {
	resolved map[string]string
	secure   *mcpconn.SecureArgs // read-only
}

func newPreparedCall(resolved map[string]bindings.Resolved, secure *mcpconn.SecureArgs) *preparedCall {
	p := &preparedCall{resolved: make(map[string]string, len(resolved)), secure: secure}
	for name, r := range resolved {
		p.resolved[name] = r.Value
	}
	return p
}

// matches reports whether resolved are the values p was prepared from.
func (p *preparedCall) matches(resolved map[string]bindings.Resolved) bool {
	if len(resolved) != len(p.resolved) {
		return false
	}
	for name, r := range resolved {
		if v, ok := p.resolved[name]; !ok || v != r.Value {
			return false
		}
	}
	return true
}
