package views

import (
	"testing"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

func TestViewSummary(t *testing.T) {
	tool := func(status mcpconn.ToolStatus, reason string) *ToolView {
		return &ToolView{CatalogTool: &mcpconn.CatalogTool{}, Status: status, Reason: reason}
	}
	v := &SessionView{
		Servers: []*mcpconn.ServerSnapshot{{Name: "a"}, {Name: "b"}},
		Tools: map[string][]*ToolView{
			"a": {tool(mcpconn.ToolActive, ""), tool(mcpconn.ToolHidden, "needs trust level 5"), tool(mcpconn.ToolExcluded, "malformed")},
			"b": {tool(mcpconn.ToolHidden, "needs trust level 5"), tool(mcpconn.ToolActive, ""), tool(mcpconn.ToolHidden, "unbindable")},
		},
	}
	got := v.Summary()
	want := ViewSummary{Active: 2, Hidden: 3, Excluded: 1, TopReason: "needs trust level 5", TopReasonCount: 2}
	if got != want {
		t.Errorf("Summary() = %+v, want %+v", got, want)
	}
	if s := (&SessionView{}).Summary(); s != (ViewSummary{}) {
		t.Errorf("empty view: %+v", s)
	}
}
