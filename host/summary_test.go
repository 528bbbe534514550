package host

import "testing"

func TestViewSummary(t *testing.T) {
	tool := func(status ToolStatus, reason string) *ToolView {
		return &ToolView{CatalogTool: &CatalogTool{}, Status: status, Reason: reason}
	}
	v := &SessionView{
		Servers: []*ServerSnapshot{{Name: "a"}, {Name: "b"}},
		Tools: map[string][]*ToolView{
			"a": {tool(ToolActive, ""), tool(ToolHidden, "needs trust level 5"), tool(ToolExcluded, "malformed")},
			"b": {tool(ToolHidden, "needs trust level 5"), tool(ToolActive, ""), tool(ToolHidden, "unbindable")},
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
