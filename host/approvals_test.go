package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

const riskTools = `[
 {"name": "get_order", "inputSchema": {"type": "object"},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}},
 {"name": "delete_order", "inputSchema": {"type": "object"},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 2}},
 {"name": "drop_everything", "inputSchema": {"type": "object"},
  "annotations": {"category": "destroy", "riskLevel": "critical", "blastRadius": "global", "reversibility": "none", "approvalRecommendation": "multi", "minTrustLevel": 3}},
 {"name": "mystery", "inputSchema": {"type": "object"}}
]`

type recordSink struct {
	mu      sync.Mutex
	records []*auditlog.Record
	fail    error
}

func (r *recordSink) Write(_ context.Context, rec *auditlog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.records = append(r.records, rec)
	return nil
}
func (r *recordSink) Close() error { return nil }
func (r *recordSink) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fail
}

func (r *recordSink) last(t *testing.T) *auditlog.Record {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.records) == 0 {
		t.Fatal("no audit record")
	}
	return r.records[len(r.records)-1]
}

func policyHost(t *testing.T, approver approvals.Approver, sink auditlog.Sink) (*Host, *mcptest.Server) {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(riskTools)})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
			{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1, Timeout: time.Second},
			{ID: "wide", When: rules.Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny", Message: "organization-wide changes are not allowed from agents"},
		}},
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

func TestApprovalOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		tool     string
		trust    int
		approver approvals.Approver
		kind     Kind // "" = success
		outcome  rules.Outcome
		asked    bool
	}{
		{"read runs without asking", "get_order", 1, nil, "", rules.OutcomeAutoAllowed, false},
		{"delete asks and is approved", "delete_order", 2, nil, "", rules.OutcomeApproved, true},
		{"delete asked and declined", "delete_order", 2, approvals.Deny{}, KindDenied, rules.OutcomeRejected, false},
		{"delete below trust level", "delete_order", 1, nil, KindDenied, rules.OutcomeTrustDenied, false},
		{"destroy with global blast radius", "drop_everything", 5, nil, KindDenied, rules.OutcomeDeniedByRule, false},
		// Unclassified: the fail-closed bucket (blast radius global) meets
		// the deny rule for wide changes.
		{"unclassified meets the deny rule", "mystery", 1, nil, KindDenied, rules.OutcomeDeniedByRule, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			approver := tc.approver
			if approver == nil {
				approver = approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
					asked = true
					return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, TS: time.Now()}}}, nil
				})
			}
			sink := &recordSink{}
			h, srv := policyHost(t, approver, sink)
			s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: tc.trust})
			res, err := s.CallTool(context.Background(), "shop", tc.tool, json.RawMessage(`{}`))
			if KindOf(err) != tc.kind && !(tc.kind == "" && err == nil) {
				t.Fatalf("err = %v (kind %v), want kind %q", err, KindOf(err), tc.kind)
			}
			if asked != tc.asked {
				t.Errorf("asked = %v, want %v", asked, tc.asked)
			}
			rec := sink.last(t)
			if rec.Outcome != tc.outcome {
				t.Errorf("audit outcome = %s, want %s", rec.Outcome, tc.outcome)
			}
			calls := len(srv.Recording().Messages("tools/call"))
			if tc.kind == "" {
				if calls != 1 || rec.Result != auditlog.ResultOK || res.Decision == nil {
					t.Errorf("calls %d, result %s, decision %+v", calls, rec.Result, res)
				}
			} else {
				var he *Error
				if !errors.As(err, &he) || he.ModelMessage == "" {
					t.Errorf("no model message: %v", err)
				}
				if calls != 0 || rec.Result != auditlog.ResultNotExecuted {
					t.Errorf("refused call executed: calls %d, result %s", calls, rec.Result)
				}
			}
		})
	}
}

func TestAuditFailureStopsCalls(t *testing.T) {
	sink := &recordSink{fail: errors.New("disk full")}
	h, srv := policyHost(t, nil, sink)
	_, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "shop", "get_order", nil)
	if err == nil {
		t.Fatal("call ran without an audit log")
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 0 {
		t.Errorf("%d calls executed un-audited", n)
	}
}

func TestInjectionIsAudited(t *testing.T) {
	sink := &recordSink{}
	h, _, _ := testHost(t, "", mcptest.Options{})
	h.setAudit(sink)
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": "c"}})
	_, err := s.CallTool(context.Background(), "db", "execute_sql", json.RawMessage(`{"query":"x","instance":"payroll"}`))
	if !errors.Is(err, ErrSecureNameInArguments) {
		t.Fatal(err)
	}
	rec := sink.last(t)
	if rec.Outcome != rules.OutcomeInjectionBlocked || rec.Result != auditlog.ResultNotExecuted {
		t.Errorf("record: %+v", rec)
	}
	b, _ := json.Marshal(rec)
	if want := `"secureParams":["instance","project_id","region"]`; !strings.Contains(string(b), want) {
		t.Errorf("record %s lacks %s", b, want)
	}
}

// Arguments that repeat a key are refused before anything is sent, and
// the attempt is audited with the arguments exactly as the model sent them.
func TestDuplicateKeysAreRefusedAndAudited(t *testing.T) {
	sink := &recordSink{}
	h, srv, _ := testHost(t, "", mcptest.Options{})
	h.setAudit(sink)
	s := h.NewSession(SessionOptions{})
	args := `{"text":"harmless","text":"rm -rf /"}`
	_, err := s.CallTool(context.Background(), "db", "echo", json.RawMessage(args))
	if !errors.Is(err, ErrDuplicateKeyInArguments) || KindOf(err) != KindToolError {
		t.Fatalf("err = %v (kind %s), want ErrDuplicateKeyInArguments, tool_error", err, KindOf(err))
	}
	var he *Error
	if !errors.As(err, &he) || !strings.Contains(he.ModelMessage, "duplicate key") {
		t.Errorf("model message %q does not say why", he.ModelMessage)
	}
	if n := len(toolCalls(t, srv)); n != 0 {
		t.Errorf("%d tools/call sent", n)
	}
	rec := sink.last(t)
	if rec.Outcome != rules.OutcomeInjectionBlocked || rec.Result != auditlog.ResultNotExecuted || rec.Tool != "echo" {
		t.Errorf("record: %+v", rec)
	}
	if string(rec.Arguments) != args {
		t.Errorf("audited arguments %s, sent %s", rec.Arguments, args)
	}
}

func TestNeverAllowedToolsAreHidden(t *testing.T) {
	h, _ := policyHost(t, nil, &recordSink{})
	h.Connect(context.Background())
	v := h.NewSession(SessionOptions{TrustLevel: 1}).View(context.Background())
	want := map[string]ToolStatus{"get_order": ToolActive, "delete_order": ToolHidden, "drop_everything": ToolHidden, "mystery": ToolHidden}
	for _, tv := range v.Tools["shop"] {
		if tv.Status != want[tv.Tool.Name] {
			t.Errorf("%s: %s (%s), want %s", tv.Tool.Name, tv.Status, tv.Reason, want[tv.Tool.Name])
		}
	}
}

func TestQueueApprovalFromAnotherGoroutine(t *testing.T) {
	queue := approvals.NewQueue(approvals.QueueOptions{})
	h, _ := policyHost(t, queue, &recordSink{})
	s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 2})
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(context.Background(), "shop", "delete_order", json.RawMessage(`{"id":1}`))
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(queue.List()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no pending approval")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p := queue.List()[0]
	if err := queue.Resolve(p.ID, "bob", true, ""); err == nil {
		t.Errorf("the requester approved its own call")
	}
	if err := queue.Resolve(p.ID, "alice", true, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("approved call failed: %v", err)
	}
}

// A session grant given on a plain call does not cover a later call whose
// arguments escalate its risk (force): the approver is asked again.
func TestSessionGrantDoesNotCoverEscalatedCalls(t *testing.T) {
	var asked []string
	approver := approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
		asked = append(asked, string(req.Risk.RiskLevel))
		return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, ForSession: req.SessionGrantable, TS: time.Now()}}}, nil
	})
	sink := &recordSink{}
	h, srv := policyHost(t, approver, sink)
	s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 2})
	ctx := context.Background()
	for i, c := range []struct {
		args    string
		outcome rules.Outcome
		asked   int
	}{
		{`{"id":1}`, rules.OutcomeApproved, 1},
		{`{"id":2}`, rules.OutcomeGranted, 1},
		{`{"id":3,"force":true}`, rules.OutcomeApproved, 2},
		{`{"id":4,"force":true}`, rules.OutcomeGranted, 2},
		{`{"id":5}`, rules.OutcomeGranted, 2},
	} {
		if _, err := s.CallTool(ctx, "shop", "delete_order", json.RawMessage(c.args)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if rec := sink.last(t); rec.Outcome != c.outcome || len(asked) != c.asked {
			t.Fatalf("call %d %s: outcome %s, asked %v; want %s, asked %d times", i, c.args, rec.Outcome, asked, c.outcome, c.asked)
		}
	}
	if want := []string{"high", "critical"}; strings.Join(asked, ",") != strings.Join(want, ",") {
		t.Errorf("asked at risk %v, want %v", asked, want)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 5 {
		t.Errorf("%d calls sent, want 5", n)
	}
}

// A call approved under one definition is not sent under another: when the
// server changes the tool while the approver holds the call, the call is
// decided again under the new definition, and both decisions are audited.
func TestDefinitionChangedWhileApprovalPending(t *testing.T) {
	const before = `{"name": "delete_order", "inputSchema": {"type": "object"},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 2}}`
	tests := []struct {
		name    string
		after   string // delete_order's new definition
		outcome rules.Outcome
		asked   int
		sent    bool
	}{
		{"now destroys globally: denied by rule", `{"name": "delete_order", "inputSchema": {"type": "object"},
  "annotations": {"category": "destroy", "riskLevel": "critical", "blastRadius": "global", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 2}}`,
			rules.OutcomeDeniedByRule, 1, false},
		{"still asked: approvers are asked again", `{"name": "delete_order", "inputSchema": {"type": "object"}, "description": "now in bulk",
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "namespace", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 2}}`,
			rules.OutcomeApproved, 2, true},
		{"now needs a higher trust level", `{"name": "delete_order", "inputSchema": {"type": "object"},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 4}}`,
			rules.OutcomeTrustDenied, 1, false},
		{"gone", ``, "", 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			next := `[{"name": "get_order", "inputSchema": {"type": "object"}, "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}`
			if tc.after != "" {
				next += ",\n" + tc.after
			}
			if err := os.WriteFile(filepath.Join(dir, "next.json"), []byte(next+"]"), 0o600); err != nil {
				t.Fatal(err)
			}
			first := `[{"name": "get_order", "inputSchema": {"type": "object"}, "x-test": {"listChanged": "next.json"},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}},
 ` + before + `]`
			if err := os.WriteFile(filepath.Join(dir, "first.json"), []byte(first), 0o600); err != nil {
				t.Fatal(err)
			}
			url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsFile: filepath.Join(dir, "first.json")})
			sink := &recordSink{}
			var h *Host
			var asked []string // definition hashes the approver was asked about
			approver := approvals.ApproverFunc(func(ctx context.Context, req *approvals.Request) (approvals.Verdict, error) {
				ct := h.Server("shop").Tool("delete_order")
				asked = append(asked, ct.Tool.DefHash())
				if len(asked) == 1 {
					// While the approver holds the call, the server changes
					// the tool (another call makes it switch its tool list)
					// and the host takes the new listing.
					if _, err := h.NewSession(SessionOptions{TrustLevel: 2}).CallTool(ctx, "shop", "get_order", nil); err != nil {
						return approvals.Verdict{}, err
					}
					if err := h.conns["shop"].Refresh(ctx); err != nil {
						return approvals.Verdict{}, err
					}
				}
				return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, TS: time.Now()}}}, nil
			})
			cfg := &config.Config{
				MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true}},
				Approvals: rules.Config{Rules: []rules.Rule{
					{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
					{ID: "deletes", When: rules.Match{Category: []string{"delete", "destroy"}}, Decide: "ask", Approvers: 1, Timeout: time.Minute},
					{ID: "wide", When: rules.Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny"},
				}},
			}
			cfg.ApplyDefaults()
			var err error
			h, err = New(Options{Config: cfg, Approver: approver, Audit: sink})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close() })

			s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 2})
			_, err = s.CallTool(context.Background(), "shop", "delete_order", json.RawMessage(`{"id":1}`))
			if tc.sent != (err == nil) {
				t.Fatalf("err = %v, want sent=%v", err, tc.sent)
			}
			if len(asked) != tc.asked {
				t.Errorf("approver asked %d times, want %d", len(asked), tc.asked)
			}
			var sent []string
			for _, m := range srv.Recording().Messages("tools/call") {
				var name string
				_ = json.Unmarshal(m.Params()["name"], &name)
				sent = append(sent, name)
			}
			if want := []string{"get_order"}; tc.sent {
				want = append(want, "delete_order")
				if !slices.Equal(sent, want) {
					t.Errorf("sent %v, want %v", sent, want)
				}
			} else if !slices.Equal(sent, want) {
				t.Errorf("sent %v, want %v (never delete_order)", sent, want)
			}

			var deletes, results []*auditlog.Record // decision records; result records
			for _, r := range sink.records {
				switch {
				case r.Tool != "delete_order":
				case r.Phase == auditlog.PhaseResult:
					results = append(results, r)
				default:
					deletes = append(deletes, r)
				}
			}
			wantRecords := 2
			if tc.after == "" {
				wantRecords = 1 // the tool is gone: nothing to decide again
			}
			if len(deletes) != wantRecords {
				t.Fatalf("%d audit records for delete_order, want %d: %+v", len(deletes), wantRecords, deletes)
			}
			first0 := deletes[0]
			if first0.Outcome != rules.OutcomeApproved || first0.Result != auditlog.ResultNotExecuted || first0.ToolDefHash != asked[0] {
				t.Errorf("first decision: %s/%s hash %s, want approved/not_executed under %s", first0.Outcome, first0.Result, first0.ToolDefHash, asked[0])
			}
			if wantRecords == 2 {
				second := deletes[1]
				if second.Outcome != tc.outcome || second.ToolDefHash == first0.ToolDefHash || second.CallID != first0.CallID {
					t.Errorf("second decision: %s hash %s call %s; want %s under a new hash, same call id %s", second.Outcome, second.ToolDefHash, second.CallID, tc.outcome, first0.CallID)
				}
				wantResult := auditlog.ResultNotExecuted
				if tc.sent {
					wantResult = auditlog.ResultPending
				}
				if second.Result != wantResult {
					t.Errorf("second decision result %s, want %s", second.Result, wantResult)
				}
			}
			if tc.sent != (len(results) == 1) || len(results) > 1 ||
				(tc.sent && (results[0].Result != auditlog.ResultOK || results[0].ToolDefHash != deletes[len(deletes)-1].ToolDefHash)) {
				t.Errorf("result records %+v; want one, ok, under the second decision's hash, only when sent", results)
			}
		})
	}
}

// TestDecisionRecordedBeforeTheCallIsSent: a call that runs has two audit
// records with its callId: the decision, handed to the sink before the
// server sees the call, and the result after it returned.
func TestDecisionRecordedBeforeTheCallIsSent(t *testing.T) {
	type seen struct {
		rec         auditlog.Record
		serverCalls int
	}
	var (
		mu  sync.Mutex
		got []seen
		srv *mcptest.Server
	)
	sink := auditlog.SinkFunc(func(_ context.Context, r *auditlog.Record) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, seen{*r, len(srv.Recording().Messages("tools/call"))})
		return nil
	})
	h, srv := policyHost(t, nil, sink)
	if _, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "shop", "get_order", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("%d records, want a decision and a result", len(got))
	}
	d, r := got[0], got[1]
	if d.rec.Phase != auditlog.PhaseDecision || d.rec.Result != auditlog.ResultPending || d.serverCalls != 0 {
		t.Errorf("first record: phase %s result %s written after %d server calls; want decision, pending, before the call",
			d.rec.Phase, d.rec.Result, d.serverCalls)
	}
	if r.rec.Phase != auditlog.PhaseResult || r.rec.Result != auditlog.ResultOK || r.serverCalls != 1 {
		t.Errorf("second record: phase %s result %s after %d server calls; want result, ok, after the call", r.rec.Phase, r.rec.Result, r.serverCalls)
	}
	if d.rec.CallID == "" || d.rec.CallID != r.rec.CallID || d.rec.Outcome != r.rec.Outcome || d.rec.ToolDefHash != r.rec.ToolDefHash {
		t.Errorf("the records do not describe the same call: %+v / %+v", d.rec, r.rec)
	}
}

// TestAuditWriteFailures: a decision record that cannot be written stops
// the call before it is sent; a result record that cannot be written
// withholds the result and says the call ran. The sink here is not sticky
// (no Err method): the host must not rely on that.
func TestAuditWriteFailures(t *testing.T) {
	for _, tc := range []struct {
		name        string
		failPhase   auditlog.Phase
		serverCalls int
		msg         string
	}{
		{"decision", auditlog.PhaseDecision, 0, "was not sent"},
		{"result", auditlog.PhaseResult, 1, "the call ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := auditlog.SinkFunc(func(_ context.Context, r *auditlog.Record) error {
				if r.Phase == tc.failPhase {
					return errors.New("disk full")
				}
				return nil
			})
			h, srv := policyHost(t, nil, sink)
			res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "shop", "get_order", nil)
			if err == nil || res != nil {
				t.Fatalf("call returned %v, %v; want an error", res, err)
			}
			if !errors.Is(err, ErrAuditFailed) || KindOf(err) != KindInternal || !strings.Contains(err.Error(), tc.msg) ||
				!strings.Contains(err.Error(), "disk full") {
				t.Errorf("err = %v (kind %s), want ErrAuditFailed, internal, saying %q", err, KindOf(err), tc.msg)
			}
			if n := len(srv.Recording().Messages("tools/call")); n != tc.serverCalls {
				t.Errorf("the server ran %d calls, want %d", n, tc.serverCalls)
			}
		})
	}
}
