package risk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

func TestSplitTokens(t *testing.T) {
	tests := map[string][]string{
		"get_user":              {"get", "user"},
		"deleteUser":            {"delete", "user"},
		"HTTPGetURL":            {"http", "get", "url"},
		"k8s.pods/delete-all":   {"k", "8", "s", "pods", "delete", "all"},
		"drop database":         {"drop", "database"},
		"ListNamespacesV2":      {"list", "namespaces", "v", "2"},
		"__weird__--name..":     {"weird", "name"},
		"":                      nil,
		"undelete_file":         {"undelete", "file"},
		"createOrUpdateRecords": {"create", "or", "update", "records"},
	}
	for in, want := range tests {
		if diff := cmp.Diff(want, norm.SplitTokens(in)); diff != "" {
			t.Errorf("splitTokens(%q) (-want +got)\n%s", in, diff)
		}
	}
}

func schema(props ...string) json.RawMessage {
	m := map[string]any{}
	for _, p := range props {
		m[p] = map[string]string{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": m})
	return b
}

func TestInfer(t *testing.T) {
	type want struct {
		ok            bool
		category      Category
		risk          RiskLevel
		blast         BlastRadius
		reversibility Reversibility
		sideEffects   []string
	}
	tests := []struct {
		name  string
		tool  ToolInfo
		extra map[string][]string
		want  want
	}{
		{name: "read verb", tool: ToolInfo{Name: "get_user"}, want: want{true, CategoryRead, RiskLow, BlastItem, "", []string{}}},
		{name: "camelCase delete", tool: ToolInfo{Name: "deleteUser"}, want: want{true, CategoryDelete, RiskHigh, BlastItem, "", []string{"state_loss"}}},
		{name: "drop is destroy", tool: ToolInfo{Name: "drop_database"}, want: want{true, CategoryDestroy, RiskCritical, BlastItem, "", []string{"state_loss"}}},
		{name: "truncate is destroy", tool: ToolInfo{Name: "TruncateTable"}, want: want{true, CategoryDestroy, RiskCritical, BlastItem, "", []string{"state_loss"}}},
		{name: "worst verb wins", tool: ToolInfo{Name: "list_and_delete_files"}, want: want{true, CategoryDelete, RiskHigh, BlastItem, "", []string{"state_loss"}}},
		{name: "whole tokens only", tool: ToolInfo{Name: "undelete_file"}, want: want{ok: false}},
		{name: "no verb", tool: ToolInfo{Name: "weather"}, want: want{ok: false}},
		{name: "non-ASCII look-alike hides a verb", tool: ToolInfo{Name: "get_all_drор"}, want: want{ok: false}},
		{name: "empty name", tool: ToolInfo{Name: " "}, want: want{ok: false}},
		{name: "mutate", tool: ToolInfo{Name: "update-record"}, want: want{true, CategoryMutate, RiskMedium, BlastItem, "", []string{}}},
		{name: "send is irreversible", tool: ToolInfo{Name: "send_email"}, want: want{true, CategoryMutate, RiskMedium, BlastItem, ReversibleNone, []string{"external_notification"}}},
		{name: "grant is privilege change", tool: ToolInfo{Name: "grant_role"}, want: want{true, CategoryMutate, RiskHigh, BlastItem, "", []string{"privilege_change"}}},
		{name: "risky flag bumps once", tool: ToolInfo{Name: "delete_pod", InputSchema: schema("force", "recursive", "cascade")},
			want: want{true, CategoryDelete, RiskCritical, BlastItem, "", []string{"state_loss"}}},
		{name: "risky flag on read", tool: ToolInfo{Name: "list_pods", InputSchema: schema("allNamespaces")},
			want: want{true, CategoryRead, RiskMedium, BlastNamespace, "", []string{}}},
		{name: "flag spelling all-namespaces", tool: ToolInfo{Name: "list_pods", InputSchema: schema("all-namespaces")},
			want: want{true, CategoryRead, RiskMedium, BlastNamespace, "", []string{}}},
		{name: "flag spelling ALL_NAMESPACES", tool: ToolInfo{Name: "list_pods", InputSchema: schema("ALL_NAMESPACES")},
			want: want{true, CategoryRead, RiskMedium, BlastNamespace, "", []string{}}},
		{name: "single-letter -f is not a flag", tool: ToolInfo{Name: "list_pods", InputSchema: schema("-f")},
			want: want{true, CategoryRead, RiskLow, BlastItem, "", []string{}}},
		{name: "widest scope wins", tool: ToolInfo{Name: "restart_service", InputSchema: schema("namespace", "clusterName")},
			want: want{true, CategoryMutate, RiskMedium, BlastCluster, "", []string{"downtime"}}},
		{name: "org scope", tool: ToolInfo{Name: "update_settings", InputSchema: schema("orgId", "namespace")},
			want: want{true, CategoryMutate, RiskMedium, BlastOrganization, "", []string{}}},
		{name: "tenant scope", tool: ToolInfo{Name: "update_settings", InputSchema: schema("tenant")},
			want: want{true, CategoryMutate, RiskMedium, BlastOrganization, "", []string{}}},
		{name: "unreadable schema is ignored", tool: ToolInfo{Name: "get_x", InputSchema: json.RawMessage(`{"properties":`)},
			want: want{true, CategoryRead, RiskLow, BlastItem, "", []string{}}},
		{name: "description raises: permanently deletes", tool: ToolInfo{Name: "update_record", Description: "Updates a record. Permanently deletes the old version."},
			want: want{true, CategoryDelete, RiskHigh, BlastItem, ReversibleNone, []string{}}},
		{name: "description cannot lower", tool: ToolInfo{Name: "drop_table", Description: "Harmless, read-only, low risk."},
			want: want{true, CategoryDestroy, RiskCritical, BlastItem, "", []string{"state_loss"}}},
		{name: "description base form does not raise", tool: ToolInfo{Name: "list_files", Description: "List files. Use it before you delete anything."},
			want: want{true, CategoryRead, RiskLow, BlastItem, "", []string{}}},
		{name: "description scope phrase", tool: ToolInfo{Name: "get_pods", Description: "Lists pods across all namespaces."},
			want: want{true, CategoryRead, RiskLow, BlastCluster, "", []string{}}},
		{name: "description cannot be undone", tool: ToolInfo{Name: "set_flag", Description: "This can't be undone!"},
			want: want{true, CategoryMutate, RiskHigh, BlastItem, ReversibleNone, []string{}}},
		{name: "extra verb", tool: ToolInfo{Name: "yeet_bucket"}, extra: map[string][]string{"destroy": {"yeet"}},
			want: want{true, CategoryDestroy, RiskCritical, BlastItem, "", []string{"state_loss"}}},
		{name: "extra verbs cannot lower a built-in", tool: ToolInfo{Name: "delete_x"}, extra: map[string][]string{"read": {"delete"}},
			want: want{true, CategoryDelete, RiskHigh, BlastItem, "", []string{"state_loss"}}},
		{name: "extra verbs can raise a built-in", tool: ToolInfo{Name: "sync_repo"}, extra: map[string][]string{"delete": {"sync"}},
			want: want{true, CategoryDelete, RiskHigh, BlastItem, "", []string{"state_loss"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := NewInferrer(tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			inf := in.Infer(tt.tool)
			if inf.Version != InferenceVersion {
				t.Errorf("version %q", inf.Version)
			}
			if inf.OK != tt.want.ok {
				t.Fatalf("OK = %v (%s), want %v", inf.OK, inf.Reason, tt.want.ok)
			}
			if !inf.OK {
				if inf.Reason == "" {
					t.Error("no reason given")
				}
				return
			}
			got := want{inf.OK, inf.Category, inf.RiskLevel, inf.BlastRadius, inf.Reversibility, inf.SideEffects}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got)\n%s\nevidence: %q", diff, inf.Evidence)
			}
			if len(inf.Evidence) == 0 {
				t.Error("no evidence recorded")
			}
		})
	}
}

func TestInferenceComplete(t *testing.T) {
	in, _ := NewInferrer(nil)
	tests := []struct {
		name     string
		tool     ToolInfo
		rev      Reversibility
		approval ApprovalRecommendation
		trust    int
	}{
		{"read", ToolInfo{Name: "get_x"}, ReversibleAuto, ApprovalNone, 1},
		{"mutate", ToolInfo{Name: "update_x"}, ReversibleManual, ApprovalSingle, 2},
		{"send", ToolInfo{Name: "send_x"}, ReversibleNone, ApprovalSingle, 2},
		{"delete", ToolInfo{Name: "delete_x"}, ReversibleNone, ApprovalSingle, 3},
		{"destroy", ToolInfo{Name: "drop_x"}, ReversibleNone, ApprovalMulti, 4},
		{"export floors to high", ToolInfo{Name: "export_x"}, ReversibleAuto, ApprovalSingle, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := in.Infer(tt.tool).Complete()
			if e.Reversibility != tt.rev || e.ApprovalRecommendation != tt.approval || e.MinTrustLevel != tt.trust {
				t.Errorf("got %s/%s/%d, want %s/%s/%d", e.Reversibility, e.ApprovalRecommendation, e.MinTrustLevel, tt.rev, tt.approval, tt.trust)
			}
			if e.Source != AllSources(SourceInferred) || e.InferenceVersion != InferenceVersion {
				t.Errorf("sources %+v version %q", e.Source, e.InferenceVersion)
			}
		})
	}
	e := in.Infer(ToolInfo{Name: "weather"}).Complete()
	e.Notes = nil
	if diff := cmp.Diff(FailClosed(), e); diff != "" {
		t.Errorf("uninferable tool (-want +got)\n%s", diff)
	}
}

func TestNewInferrerRejectsBadVerbs(t *testing.T) {
	for _, extra := range []map[string][]string{
		{"nuke": {"zap"}},
		{"delete": {"Zap"}},
		{"delete": {"two words"}},
		{"delete": {""}},
	} {
		_, err := NewInferrer(extra)
		var fe *FieldError
		if err == nil || !strings.HasPrefix(err.Error(), "extraVerbs.") || !errors.As(err, &fe) {
			t.Errorf("NewInferrer(%v) = %v, want a FieldError naming extraVerbs", extra, err)
		}
	}
}

// TestExtraVerbsStayWithTheirInferrer: inferrers without extra verbs share
// the built-in table, so one built with extra verbs must not change it.
func TestExtraVerbsStayWithTheirInferrer(t *testing.T) {
	plain, err := NewInferrer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewInferrer(map[string][]string{"destroy": {"yeet", "sync"}}); err != nil {
		t.Fatal(err)
	}
	later, err := NewInferrer(map[string][]string{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []*Inferrer{plain, later} {
		if inf := in.Infer(ToolInfo{Name: "yeet_bucket"}); inf.OK {
			t.Errorf("yeet_bucket inferred as %s without the extra verb", inf.Category)
		}
		if inf := in.Infer(ToolInfo{Name: "sync_repo"}); inf.Category != CategoryMutate {
			t.Errorf("sync_repo = %s, want the built-in mutate", inf.Category)
		}
	}
}
