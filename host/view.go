package host

import (
	"context"
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
// secure parameters cannot be bound in this session is hidden (with a
// reason) rather than shown and failing.
func (s *Session) View(ctx context.Context) *SessionView {
	ctx = s.bindingContext(ctx)
	servers := s.host.Servers()
	v := &SessionView{Servers: servers, Tools: map[string][]*ToolView{}}
	var active []llmview.Tool
	var all []llmview.Ref
	for _, snap := range servers {
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
			v.Tools[snap.Name] = append(v.Tools[snap.Name], tv)
			ref := llmview.Ref{Server: snap.Name, Tool: ct.Tool.Name}
			all = append(all, ref)
			if tv.Status == ToolActive {
				active = append(active, llmview.Tool{Ref: ref, Description: ct.Tool.Description, InputSchema: ct.Tool.InputSchema})
			}
		}
	}
	names := llmview.ExposedNames(all)
	for server, tools := range v.Tools {
		for _, tv := range tools {
			tv.ExposedName = names[llmview.Ref{Server: server, Tool: tv.Tool.Name}]
		}
	}
	v.Model = llmview.Build(active, names)
	return v
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
