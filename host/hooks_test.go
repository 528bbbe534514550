package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// hookHost is policyHost with hooks: pre and post are shell commands run
// for every tool of server shop (nil: none).
func hookHost(t *testing.T, approver approvals.Approver, sink auditlog.Sink, pre, post string) (*Host, *mcptest.Server) {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(riskTools),
		Handler: func(_ context.Context, _ string, _, _ map[string]json.RawMessage) (string, bool) {
			return "order 7: card 4111-1111", false
		}})
	dir := t.TempDir()
	cfg := &config.Config{
		File:       filepath.Join(dir, "agenthost.yaml"),
		MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
			{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1, Timeout: time.Second},
		}},
	}
	if pre != "" {
		cfg.Hooks.PreToolUse = []hooks.Group{{Matcher: "mcp__shop__.*", Hooks: []hooks.Hook{{Type: "command", Command: pre, ID: "pre", Timeout: 5}}}}
	}
	if post != "" {
		cfg.Hooks.PostToolUse = []hooks.Group{{Matcher: "mcp__shop__get_order", Hooks: []hooks.Hook{{Type: "command", Command: post, ID: "post", Timeout: 5}}}}
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: cfg, Approver: approver, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, srv
}

func preOut(decision, reason string) string {
	return `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + decision + `","permissionDecisionReason":"` + reason + `"}}'`
}

func TestPreToolUseHooks(t *testing.T) {
	alice := func(asked *bool) approvals.Approver {
		return approvals.ApproverFunc(func(context.Context, *approvals.Request) (approvals.Verdict, error) {
			*asked = true
			return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, TS: time.Now()}}}, nil
		})
	}
	tests := []struct {
		name    string
		hook    string
		tool    string
		kind    Kind // "" = ran
		outcome rules.Outcome
		rule    string
		asked   bool
		model   string // in the model's message
	}{
		{"allow changes nothing", preOut("allow", ""), "get_order", "", rules.OutcomeAutoAllowed, "", false, ""},
		{"allow does not skip an ask", preOut("allow", ""), "delete_order", "", rules.OutcomeApproved, "", true, ""},
		{"deny denies, reason to the model", preOut("deny", "orders are frozen"), "get_order", KindDenied, rules.OutcomeDeniedByRule, "hook:pre", false, "orders are frozen"},
		{"exit 2 denies with stderr", `echo "no reads today" >&2; exit 2`, "get_order", KindDenied, rules.OutcomeDeniedByRule, "hook:pre", false, "no reads today"},
		{"ask raises an allow", preOut("ask", "check it"), "get_order", "", rules.OutcomeApproved, "hook:pre", true, ""},
		{"crash denies", `exit 1`, "get_order", KindDenied, rules.OutcomeDeniedByRule, "hook:pre:failed", false, ""},
		{"timeout denies", `sleep 30`, "get_order", KindDenied, rules.OutcomeDeniedByRule, "hook:pre:timeout", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hook := tc.hook
			asked := false
			sink := &recordSink{}
			h, srv := hookHost(t, alice(&asked), sink, hook, "")
			if tc.name == "timeout denies" {
				h.hooks = mustRunner(t, hooks.Config{PreToolUse: []hooks.Group{{Hooks: []hooks.Hook{{Type: "command", Command: hook, ID: "pre", Timeout: 0.2}}}}})
			}
			s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 3})
			_, err := s.CallTool(context.Background(), "shop", tc.tool, json.RawMessage(`{"id":7}`))
			if KindOf(err) != tc.kind && !(tc.kind == "" && err == nil) {
				t.Fatalf("err = %v (kind %v), want kind %q", err, KindOf(err), tc.kind)
			}
			if asked != tc.asked {
				t.Errorf("asked = %v, want %v", asked, tc.asked)
			}
			calls := len(srv.Recording().Messages("tools/call"))
			if (tc.kind == "") != (calls == 1) {
				t.Errorf("tools/call sent %d times", calls)
			}
			var dec *auditlog.Record
			for _, r := range sink.records {
				if r.Phase == auditlog.PhaseDecision {
					dec = r
				}
			}
			if dec == nil || dec.Outcome != tc.outcome {
				t.Fatalf("decision record %+v, want outcome %s", dec, tc.outcome)
			}
			if tc.rule != "" && !slices.Contains(dec.Rules, tc.rule) {
				t.Errorf("rules %v lack %s", dec.Rules, tc.rule)
			}
			var he *Error
			if tc.kind != "" && errors.As(err, &he) && !strings.Contains(he.ModelMessage, tc.model) {
				t.Errorf("model message %q lacks %q", he.ModelMessage, tc.model)
			}
		})
	}
}

func mustRunner(t *testing.T, cfg hooks.Config) *hooks.Runner {
	t.Helper()
	r, err := hooks.New(cfg, hooks.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPostToolUseHooks(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen.json")
	tests := []struct {
		name    string
		hook    string
		text    string
		isError bool
		rule    string
	}{
		{"no change", `cat > "` + seen + `"`, "order 7: card 4111-1111", false, ""},
		{"replace with a string", `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":"order 7: card [redacted]"}}'`, "order 7: card [redacted]", false, "hook:post:replaced"},
		{"replace with content", `echo '{"hookSpecificOutput":{"updatedToolOutput":[{"type":"text","text":"masked"}]}}'`, "masked", false, "hook:post:replaced"},
		{"block withholds", `echo '{"decision":"block","reason":"holds card data"}'`, "The tool ran, but a hook withheld its result. Hook note: holds card data", true, "hook:post:withheld"},
		{"crash withholds", `exit 3`, "The tool ran, but a hook withheld its result.", true, "hook:post:failed"},
		{"context is added", `echo '{"hookSpecificOutput":{"additionalContext":"card numbers are test data"}}'`, "order 7: card 4111-1111\ncard numbers are test data", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordSink{}
			h, _ := hookHost(t, nil, sink, "", tc.hook)
			res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "shop", "get_order", json.RawMessage(`{"id":7}`))
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, c := range res.Result.Content {
				if tc, ok := c.(mcp.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			if got := strings.Join(texts, "\n"); got != tc.text || res.Result.IsError != tc.isError {
				t.Fatalf("model sees %q (isError %v), want %q (%v)", got, res.Result.IsError, tc.text, tc.isError)
			}
			done := sink.last(t)
			if done.Phase != auditlog.PhaseResult {
				t.Fatalf("last record is %s", done.Phase)
			}
			if tc.rule != "" && !slices.Contains(done.Rules, tc.rule) || tc.rule == "" && slices.ContainsFunc(done.Rules, func(r string) bool { return strings.HasPrefix(r, "hook:") }) {
				t.Errorf("result record rules %v, want %q", done.Rules, tc.rule)
			}
		})
	}
	var in struct {
		Event    string `json:"hook_event_name"`
		ToolName string `json:"tool_name"`
		Response struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"tool_response"`
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil || in.Event != "PostToolUse" || in.ToolName != "mcp__shop__get_order" || len(in.Response.Content) != 1 || in.Response.Content[0].Text != "order 7: card 4111-1111" {
		t.Fatalf("the hook read %s (%v)", b, err)
	}
}

// PermissionRequest hooks vote as named approvers: counted like anyone
// else, a deny vetoes, a failure denies, and an allow is never enough
// alone.
func TestPermissionRequestHooks(t *testing.T) {
	allowOut := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'`
	denyOut := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"change freeze"}}}'`
	person := func(asked *int, needed *int, allow bool) approvals.Approver {
		return approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
			*asked++
			*needed = req.Approvers
			if !allow {
				return approvals.Verdict{}, nil
			}
			return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, TS: time.Now()}}}, nil
		})
	}
	tests := []struct {
		name     string
		hook     string
		tool     string
		allow    bool // the person allows
		auto     bool // the approver behind is approvals.Auto (at most one)
		outcome  rules.Outcome
		asked    int
		needed   int
		approver []string
		model    string
	}{
		{"hook and person make a quorum of two", allowOut, "drop_everything", true, false, rules.OutcomeApproved, 1, 1, []string{"sec-bot", "alice"}, ""},
		{"hook alone is not enough", allowOut, "delete_order", false, false, rules.OutcomeRejected, 1, 1, nil, ""},
		{"hook and Auto make a quorum of two", allowOut, "drop_everything", false, true, rules.OutcomeApproved, 0, 0, []string{"sec-bot", "auto"}, ""},
		{"hook deny vetoes without asking", denyOut, "delete_order", true, false, rules.OutcomeRejected, 0, 0, []string{"sec-bot"}, "change freeze"},
		{"hook failure vetoes", `exit 1`, "delete_order", true, false, rules.OutcomeRejected, 0, 0, []string{"sec-bot"}, ""},
		{"no answer: the person decides", `cat >/dev/null`, "delete_order", true, false, rules.OutcomeApproved, 1, 1, []string{"alice"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked, needed := 0, 0
			var approver approvals.Approver = person(&asked, &needed, tc.allow)
			if tc.auto {
				approver = approvals.Auto{}
			}
			sink := &recordSink{}
			h, _ := hookHost(t, approver, sink, "", "")
			runner, err := hooks.New(hooks.Config{PermissionRequest: []hooks.Group{{Matcher: "mcp__shop__.*", Hooks: []hooks.Hook{{Type: "command", Command: tc.hook, Approver: "sec-bot"}}}}}, hooks.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			h.hooks = runner
			h.cfg.Hooks.PermissionRequest = []hooks.Group{{Hooks: []hooks.Hook{{Approver: "sec-bot"}}}}
			h.policy = mustPolicy(t, rules.Config{Rules: []rules.Rule{
				{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1, Timeout: time.Second},
				{ID: "destroys", When: rules.Match{Category: []string{"destroy"}}, Decide: "ask", Approvers: 2, Timeout: time.Second},
			}})
			s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 3})
			_, err = s.CallTool(context.Background(), "shop", tc.tool, json.RawMessage(`{"id":7}`))
			var dec *auditlog.Record
			for _, r := range sink.records {
				if r.Phase == auditlog.PhaseDecision {
					dec = r
				}
			}
			if dec == nil || dec.Outcome != tc.outcome || asked != tc.asked || needed != tc.needed {
				t.Fatalf("outcome %+v, person asked %d for %d; want %s, %d, %d (err %v)", dec, asked, needed, tc.outcome, tc.asked, tc.needed, err)
			}
			var ids []string
			for _, v := range dec.Approvers {
				ids = append(ids, v.ApproverID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.approver, ",") {
				t.Errorf("votes %v, want %v", ids, tc.approver)
			}
			var he *Error
			if tc.model != "" && (!errors.As(err, &he) || !strings.Contains(he.ModelMessage, tc.model)) {
				t.Errorf("model message lacks %q: %v", tc.model, err)
			}
		})
	}
}

func mustPolicy(t *testing.T, cfg rules.Config) *rules.Policy {
	t.Helper()
	p, err := rules.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A PreToolUse hook's additionalContext reaches the model with the result.
func TestPreToolUseContext(t *testing.T) {
	sink := &recordSink{}
	h, _ := hookHost(t, nil, sink, `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"orders over 1000 need a manager"}}'`, "")
	res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "shop", "get_order", json.RawMessage(`{"id":7}`))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range res.Result.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if got := strings.Join(texts, "\n"); got != "order 7: card 4111-1111\norders over 1000 need a manager" {
		t.Fatalf("model sees %q", got)
	}
}
