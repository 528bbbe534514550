package mcpconn

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
)

// Tool filters use the configuration's one glob dialect: * matches across
// "/", so deny: [drop_*] hides drop_db/all and allow: ["*"] offers names
// with a "/". A tool with an empty name is excluded with a reason.
func TestToolFiltersAndEmptyNames(t *testing.T) {
	names := []string{"drop_db", "drop_db/all", "k8s/pods.delete", "get_order", ""}
	listed := make([]secureparams.ListedTool, len(names))
	for i, n := range names {
		listed[i] = secureparams.ListedTool{Raw: json.RawMessage(fmt.Sprintf(`{"name": %q, "inputSchema": {"type": "object"}}`, n))}
	}
	tests := []struct {
		name   string
		filter config.ToolFilter
		want   map[string]ToolStatus
	}{
		{"no filter", config.ToolFilter{}, map[string]ToolStatus{
			"drop_db": ToolActive, "drop_db/all": ToolActive, "k8s/pods.delete": ToolActive, "get_order": ToolActive, "": ToolExcluded}},
		{"deny drop_*", config.ToolFilter{Deny: []string{"drop_*"}}, map[string]ToolStatus{
			"drop_db": ToolHidden, "drop_db/all": ToolHidden, "k8s/pods.delete": ToolActive, "get_order": ToolActive, "": ToolExcluded}},
		{"allow *", config.ToolFilter{Allow: []string{"*"}}, map[string]ToolStatus{
			"drop_db": ToolActive, "drop_db/all": ToolActive, "k8s/pods.delete": ToolActive, "get_order": ToolActive, "": ToolExcluded}},
		{"allow k8s/*.delete", config.ToolFilter{Allow: []string{"k8s*.delete"}}, map[string]ToolStatus{
			"drop_db": ToolHidden, "drop_db/all": ToolHidden, "k8s/pods.delete": ToolActive, "get_order": ToolHidden, "": ToolExcluded}},
		{"case-sensitive", config.ToolFilter{Deny: []string{"DROP_*"}}, map[string]ToolStatus{
			"drop_db": ToolActive, "drop_db/all": ToolActive, "k8s/pods.delete": ToolActive, "get_order": ToolActive, "": ToolExcluded}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, _ := buildCatalog("srv", listed, true, tc.filter, nil)
			if len(tools) != len(names) {
				t.Fatalf("%d tools, want %d", len(tools), len(names))
			}
			for _, ct := range tools {
				if got, want := ct.Status, tc.want[ct.Tool.Name]; got != want {
					t.Errorf("%q: %s (%s), want %s", ct.Tool.Name, got, ct.Reason, want)
				}
				if ct.Tool.Name == "" && ct.Reason != "the tool has an empty name" {
					t.Errorf("empty name excluded with reason %q", ct.Reason)
				}
			}
		})
	}
}
