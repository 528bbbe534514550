// Package secureargs owns the secure values of a call: resolved by the
// binder after the gate allowed the call, coerced and validated against
// the tool's secureInputSchema, encoded for secureArguments and its
// parameter headers, and kept per tool definition while the bound values
// stay the same (Cache).
package secureargs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/secureparams"
)

// Source is what a host's sessions resolve their secure values with: the
// binder, the log the retry is told in, and the servers' listings (a
// toolbox server's tool requires every secure parameter it names).
type Source struct {
	Binder   *bindings.Binder
	Logger   *slog.Logger
	Snapshot func(server string) *mcpconn.ServerSnapshot
}

// Session is one session's secure values: resolved for a call the gate
// allowed (Args), resolved afresh for the one retry after the server
// rejected them (Renew), and prepared once per tool definition while the
// bound values stay the same. The session they are of is told at each call
// (Of), so that a host's session holds a Session in its own struct with
// nothing of its own repeated: an idle session costs no more for it.
type Session struct {
	src   *Source
	cache Cache
}

// Of is the session a call's secure values are of: its id and subject,
// and its session values now (for the session source).
type Of struct {
	ID, Subject string
	Values      bindings.MapValues
}

// Init makes s a session's secure values resolved with src; a host's
// session holds its Session in its own struct and calls this once.
func (s *Session) Init(src *Source) { s.src = src }

// Args resolves, coerces and validates t's secure values for a call of
// server; nil for a tool without secureInputSchema (it never gets
// secureArguments). Errors are *hosterr.Error of KindBinding.
func (s *Session) Args(ctx context.Context, of Of, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	if !t.HasSecureSchema {
		return nil, nil
	}
	schema, err := t.ValueSchema()
	if err != nil {
		return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, err, "%s/%s: secureInputSchema cannot be compiled: %v", server, t.Name, err)
	}
	bctx := bindings.ContextWithSessionValues(ctx, of.Values)
	resolved, err := s.src.Binder.Resolve(bctx, of.scope(server, t), schema.PropertiesShared(), Required(s.src.Snapshot(server), t))
	if err != nil {
		return nil, hosterr.New(hosterr.KindBinding, hosterr.MsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	return s.cache.Prepare(server, t, schema, resolved)
}

// Renew drops the binder's cached values of t's secure parameters and
// resolves fresh ones, for the one retry after the server rejected the
// host's values (an expired or revoked token, say).
func (s *Session) Renew(ctx context.Context, of Of, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	for _, p := range t.SecureParams {
		scope := of.scope(server, t)
		scope.Param = p
		s.src.Binder.Invalidate(scope)
	}
	fresh, err := s.Args(ctx, of, server, t)
	if err == nil {
		s.src.Logger.Info("server rejected the secure arguments; retrying once with freshly resolved values", "server", server, "tool", t.Name)
	}
	return fresh, err
}

// Clear drops the session's prepared values (the session closed).
func (s *Session) Clear() { s.cache.Clear() }

// Len is how many prepared calls the session keeps.
func (s *Session) Len() int { return s.cache.Len() }

// scope is what the binder resolves a secure value of the session's call
// of t for.
func (of Of) scope(server string, t *secureparams.Tool) bindings.Scope {
	return bindings.Scope{SessionID: of.ID, Subject: of.Subject, Server: server, Tool: t.Name}
}

// Required are the secure names every call of t must carry: under
// Toolbox's extension every secure parameter (Toolbox makes each one
// required whatever secureInputSchema says, and answers a call without one
// with a tool error), otherwise secureInputSchema's required ones.
func Required(snap *mcpconn.ServerSnapshot, t *secureparams.Tool) []string {
	if snap != nil && snap.Extension == config.ToolboxSecureParamsExtension {
		return t.SecureParams
	}
	return t.SecureRequired
}

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
