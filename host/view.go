package host

import (
	"context"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/llmview"
)

// ToolView is one tool as a session sees it: the catalog entry plus the
// session's verdict (a valid tool may still be hidden from this session).
type ToolView struct {
	*CatalogTool
	ExposedName string
	Status      ToolStatus
	Reason      string
}

// SessionView is the tool view of a session over every connected server.
type SessionView struct {
	Servers []*ServerSnapshot
	// Tools per server name, in listing order.
	Tools map[string][]*ToolView
	// Model is what the model is sent: active tools only.
	Model *llmview.View
}

// View computes what this session may be offered. A tool whose required
// secure parameters cannot be bound in this session, or that the session
// can never be allowed to call, is hidden (with a reason) rather than shown
// and failing. Per-server verdicts are cached: only servers whose tool list
// changed (or all of them, after the session's values changed) are
// re-evaluated.
func (s *Session) View(ctx context.Context) *SessionView {
	ctx = s.bindingContext(ctx)
	servers := s.host.Servers()
	epoch := s.valuesEpoch.Load()

	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if s.viewCache == nil {
		s.viewCache = map[string]*serverView{}
	}
	changed := s.lastView == nil || len(s.viewCache) != len(servers)
	for _, snap := range servers {
		sv := s.viewCache[snap.Name]
		if sv != nil && sv.snap == snap && sv.epoch == epoch {
			continue
		}
		s.viewCache[snap.Name] = s.evaluate(ctx, snap, epoch)
		changed = true
	}
	if !changed {
		return s.lastView
	}

	v := &SessionView{Servers: servers, Tools: make(map[string][]*ToolView, len(servers))}
	names := s.host.exposedNames(servers)
	var active []llmview.Tool
	for _, snap := range servers {
		cached := s.viewCache[snap.Name].tools
		tools := make([]*ToolView, len(cached))
		for i, tv := range cached {
			copied := *tv
			ref := llmview.Ref{Server: snap.Name, Tool: tv.Tool.Name}
			copied.ExposedName = names[ref]
			tools[i] = &copied
			if copied.Status == ToolActive {
				active = append(active, llmview.Tool{Ref: ref, Description: tv.Tool.Description, InputSchema: tv.Tool.InputSchema, Parameters: tv.Parameters})
			}
		}
		v.Tools[snap.Name] = tools
	}
	v.Model = llmview.Build(active, names)
	s.lastView = v
	return v
}

// serverView caches one server's verdicts for a session.
type serverView struct {
	snap  *ServerSnapshot
	epoch uint64
	tools []*ToolView
}

func (s *Session) evaluate(ctx context.Context, snap *ServerSnapshot, epoch uint64) *serverView {
	sv := &serverView{snap: snap, epoch: epoch, tools: make([]*ToolView, 0, len(snap.Tools))}
	for _, ct := range snap.Tools {
		tv := &ToolView{CatalogTool: ct, Status: ct.Status, Reason: ct.Reason}
		if tv.Status == ToolActive {
			if missing := s.unbindable(ctx, snap.Name, ct); len(missing) > 0 {
				tv.Status = ToolHidden
				tv.Reason = "required secure parameters cannot be bound in this session: " + strings.Join(missing, ", ")
			} else if never, why := s.neverAllowed(snap.Name, ct); never {
				tv.Status = ToolHidden
				tv.Reason = "this session can never be allowed to call it: " + why
			}
		}
		sv.tools = append(sv.tools, tv)
	}
	return sv
}

// unbindable lists the tool's required secure parameters that no binding can
// fill for this session.
func (s *Session) unbindable(ctx context.Context, server string, ct *CatalogTool) []string {
	var missing []string
	for _, p := range ct.Tool.SecureRequired {
		if !s.host.binder.CanBind(ctx, server, ct.Tool.Name, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// exposedNames are the catalog's exposed tool names. They depend on the
// catalog only (every listed tool, whatever a session may see), so all
// sessions share one computation per catalog state.
func (h *Host) exposedNames(servers []*ServerSnapshot) map[llmview.Ref]string {
	var key strings.Builder
	for _, snap := range servers {
		fmt.Fprintf(&key, "%s\x00%d\x00", snap.Name, snap.Generation)
	}
	h.namesMu.Lock()
	defer h.namesMu.Unlock()
	if h.namesKey == key.String() && h.exposed != nil {
		return h.exposed
	}
	var all []llmview.Ref
	for _, snap := range servers {
		for _, ct := range snap.Tools {
			all = append(all, llmview.Ref{Server: snap.Name, Tool: ct.Tool.Name})
		}
	}
	h.exposed = llmview.ExposedNames(all)
	h.namesKey = key.String()
	return h.exposed
}
