package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func newGate(t *testing.T, p *rules.Policy, a Approver) *Gate {
	t.Helper()
	g, err := NewGate(GateConfig{Policy: p, Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// votes returns an approver that answers with fixed votes and counts calls.
func votes(calls *atomic.Int32, vs ...Vote) Approver {
	return ApproverFunc(func(context.Context, *Request) (Verdict, error) {
		calls.Add(1)
		return Verdict{Votes: vs}, nil
	})
}

func check(risk risk.Effective, args string) Check {
	return Check{SessionID: "sess", Subject: "user", CallID: "c1",
		Call: rules.Call{Server: "srv", Tool: "tool", Args: json.RawMessage(args), TrustLevel: 3},
		Risk: risk, ToolDefHash: "sha256:def1", ExposedName: "srv__tool", SecureParams: []string{"token"}}
}

func TestGateOutcomes(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	read := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	del := risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1)
	wide := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastGlobal, risk.ApprovalSingle, 1)
	allow := func(id string) Vote { return Vote{ApproverID: id, Decision: VoteAllow} }
	deny := func(id, note string) Vote { return Vote{ApproverID: id, Decision: VoteDeny, Note: note} }
	tests := []struct {
		name     string
		risk     risk.Effective
		approver func(*atomic.Int32) Approver
		outcome  rules.Outcome
		reason   rules.ReasonClass
		asked    int32
	}{
		{"allow rule does not ask", read, func(c *atomic.Int32) Approver { return votes(c) }, rules.OutcomeAutoAllowed, "", 0},
		{"deny rule does not ask", wide, func(c *atomic.Int32) Approver { return votes(c, allow("a"), allow("b")) }, rules.OutcomeDeniedByRule, rules.ReasonPolicy, 0},
		{"trust too low does not ask", risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 5), func(c *atomic.Int32) Approver { return votes(c, allow("a")) }, rules.OutcomeTrustDenied, rules.ReasonTrust, 0},
		{"one approver approves", write, func(c *atomic.Int32) Approver { return votes(c, allow("alice")) }, rules.OutcomeApproved, "", 1},
		{"deny vote rejects", write, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), deny("bob", "no")) }, rules.OutcomeRejected, rules.ReasonDeclined, 1},
		{"no votes: no approver", write, func(c *atomic.Int32) Approver { return votes(c) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"requester's own vote does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("user")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"anonymous vote does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow(" ")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"same approver twice counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), allow("alice")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"same approver in another case counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("Bob")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"an approver id with a zero-width space does not count", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("bob\u200b")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"same approver in fullwidth letters counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("\uff42\uff4f\uff42")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"requester in another case does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("User")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"requester with a format character does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("\u200duser\u2060 ")) }, rules.OutcomeRejected, rules.ReasonNoApprover, 1},
		{"two distinct approvers approve", del, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), allow("bob")) }, rules.OutcomeApproved, "", 1},
		{"expired verdict", write, func(c *atomic.Int32) Approver {
			return ApproverFunc(func(context.Context, *Request) (Verdict, error) { c.Add(1); return Verdict{Expired: true}, nil })
		}, rules.OutcomeExpired, rules.ReasonTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			g := newGate(t, p, tt.approver(&calls))
			res, err := g.Check(context.Background(), check(tt.risk, `{"id":1}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.outcome || res.Reason != tt.reason || calls.Load() != tt.asked {
				t.Errorf("got %s/%s asked %d, want %s/%s asked %d", res.Outcome, res.Reason, calls.Load(), tt.outcome, tt.reason, tt.asked)
			}
			if res.Allowed() != (res.ModelMessage == "") {
				t.Errorf("allowed=%v but model message %q", res.Allowed(), res.ModelMessage)
			}
		})
	}
}

func TestGateAutoCountsAsOneApprover(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	g := newGate(t, p, Auto{})
	res, _ := g.Check(context.Background(), check(risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1), `{}`))
	if res.Outcome != rules.OutcomeApproved || len(res.Votes) != 1 || res.Votes[0].ApproverID != autoApproverID {
		t.Errorf("single: %s %+v", res.Outcome, res.Votes)
	}
	res, _ = g.Check(context.Background(), check(risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), `{}`))
	if res.Outcome != rules.OutcomeRejected || res.Reason != rules.ReasonNoApprover {
		t.Errorf("multi with auto: %s/%s, want rejected/no_approver", res.Outcome, res.Reason)
	}
	res, _ = newGate(t, p, nil).Check(context.Background(), check(risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1), `{}`))
	if res.Outcome != rules.OutcomeRejected || res.Reason != rules.ReasonNoApprover {
		t.Errorf("default Deny approver: %s/%s", res.Outcome, res.Reason)
	}
}

func TestGateTimeoutAndDenialMemory(t *testing.T) {
	cfg := approvaltest.ContractConfig()
	cfg.Rules[1].Timeout = 40 * time.Millisecond
	p := approvaltest.MustPolicy(t, cfg)
	var asked atomic.Int32
	q := NewQueue(QueueOptions{OnPending: func(Pending) { asked.Add(1) }})
	g := newGate(t, p, q)
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)

	start := time.Now()
	res, err := g.Check(context.Background(), check(write, `{"a":1,"b":2}`))
	if err != nil || res.Outcome != rules.OutcomeExpired || res.Reason != rules.ReasonTimeout {
		t.Fatalf("got %s/%s err %v, want expired/timeout", res.Outcome, res.Reason, err)
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Errorf("expired before the rule timeout")
	}
	// The identical call (same arguments in another key order) is answered
	// from memory without asking.
	res, err = g.Check(context.Background(), check(write, `{"b":2, "a":1}`))
	if err != nil || res.Outcome != rules.OutcomeExpired || !res.Remembered || asked.Load() != 1 {
		t.Fatalf("retry: %s remembered=%v asked=%d err %v", res.Outcome, res.Remembered, asked.Load(), err)
	}
	if !strings.Contains(res.ModelMessage, "not executed") {
		t.Errorf("model message %q", res.ModelMessage)
	}
	// Different arguments are a different call.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() {
		for len(q.List()) == 0 {
			time.Sleep(time.Millisecond)
		}
		_ = q.Resolve(q.List()[0].ID, "alice", true, "")
	}()
	res, err = g.Check(ctx, check(write, `{"a":2}`))
	if err != nil || res.Outcome != rules.OutcomeApproved || asked.Load() != 2 {
		t.Errorf("other arguments: %s asked=%d err %v", res.Outcome, asked.Load(), err)
	}
}

func TestGateGrants(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	var asked atomic.Int32
	sessionVote := ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		asked.Add(1)
		return Verdict{Votes: []Vote{{ApproverID: "alice", Decision: VoteAllow, ForSession: req.SessionGrantable}}}, nil
	})
	g := newGate(t, p, sessionVote)
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)

	c := check(write, `{"x":1}`)
	if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved {
		t.Fatalf("first call %s", res.Outcome)
	}
	c.Call.Args = json.RawMessage(`{"x":2}`)
	if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeGranted || asked.Load() != 1 {
		t.Fatalf("second call %s asked %d, want granted without asking", res.Outcome, asked.Load())
	}
	// The definition changed: the grant is void, approvers are asked again.
	c.ToolDefHash = "sha256:def2"
	if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved || asked.Load() != 2 {
		t.Fatalf("after definition change %s asked %d", res.Outcome, asked.Load())
	}

	// Multi-approver tools are never granted, whatever the approver says.
	multiAsked := 0
	g2 := newGate(t, p, ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		multiAsked++
		if req.SessionGrantable {
			t.Error("session grant offered for a multi-approver tool")
		}
		return Verdict{Votes: []Vote{
			{ApproverID: "alice", Decision: VoteAllow, ForSession: true},
			{ApproverID: "bob", Decision: VoteAllow, ForSession: true},
		}}, nil
	}))
	del := check(risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), `{}`)
	for i := 0; i < 2; i++ {
		if res, _ := g2.Check(context.Background(), del); res.Outcome != rules.OutcomeApproved {
			t.Fatalf("multi call %d: %s", i, res.Outcome)
		}
	}
	if multiAsked != 2 || g2.grants.Len() != 0 {
		t.Errorf("multi-approver tool: asked %d, grants %d", multiAsked, g2.grants.Len())
	}
	// A grant from an earlier single-approver policy never covers a call
	// that now needs two approvers.
	if err := g2.grants.Grant("srv", "tool", del.ToolDefHash, 1, del.Risk); err != nil {
		t.Fatal(err)
	}
	if res, _ := g2.Check(context.Background(), del); res.Outcome == rules.OutcomeGranted {
		t.Error("grant applied to a multi-approver call")
	}
}

func TestGrants(t *testing.T) {
	g := newSessionGrants()
	low := risktest.Eff(risk.CategoryMutate, risk.RiskLow, risk.BlastItem, risk.ApprovalSingle, 1)
	if err := g.Grant("s", "t", "h1", 2, low); !errors.Is(err, errGrantNotAllowed) {
		t.Errorf("multi-approver grant: %v", err)
	}
	if err := g.Grant("s", "t", "", 1, low); !errors.Is(err, errGrantNotAllowed) {
		t.Errorf("grant without hash: %v", err)
	}
	if err := g.Grant("s", "t", "h1", 1, low); err != nil {
		t.Fatal(err)
	}
	if !g.Allowed("s", "t", "h1", low) || g.Allowed("s", "other", "h1", low) || g.Allowed("other", "t", "h1", low) {
		t.Error("grant scope wrong")
	}
	if g.Allowed("s", "t", "h2", low) {
		t.Error("grant survived a definition change")
	}
	if g.Allowed("s", "t", "h1", low) {
		t.Error("void grant came back for the old hash")
	}
	_ = g.Grant("s", "t", "h1", 0, low)
	g.Revoke("s", "t")
	if g.Allowed("s", "t", "h1", low) {
		t.Error("revoked grant still allowed")
	}
}

func TestGateErrors(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	boom := errors.New("approver backend down")
	g := newGate(t, p, ApproverFunc(func(context.Context, *Request) (Verdict, error) { return Verdict{}, boom }))
	res, err := g.Check(context.Background(), check(write, `{}`))
	if !errors.Is(err, boom) || res.Outcome != rules.OutcomeError || res.Allowed() || res.ModelMessage == "" {
		t.Errorf("approver error: %s err %v", res.Outcome, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := NewQueue(QueueOptions{OnPending: func(Pending) { cancel() }})
	res, err = newGate(t, p, q).Check(ctx, check(write, `{}`))
	if !errors.Is(err, context.Canceled) || res.Outcome != rules.OutcomeError {
		t.Errorf("cancelled turn: %s err %v", res.Outcome, err)
	}
	if _, err := NewGate(GateConfig{}); err == nil {
		t.Error("NewGate without a policy succeeded")
	}
}

func TestGateRequestCarriesWhatApproversNeed(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	var got *Request
	g := newGate(t, p, ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		got = req
		return Verdict{}, nil
	}))
	c := check(risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), `{"force":true}`)
	before := time.Now()
	res, _ := g.Check(context.Background(), c)
	if got == nil {
		t.Fatal("approver not asked")
	}
	if got.ID == "" || got.ID != res.RequestID || got.SessionID != "sess" || got.Requester != "user" || got.CallID != "c1" ||
		got.Server != "srv" || got.Tool != "tool" || string(got.Arguments) != `{"force":true}` || got.Approvers != 2 ||
		got.Risk.RiskLevel != risk.RiskCritical || len(got.Rules) != 1 || got.Rules[0] != "deletes" || got.SessionGrantable {
		t.Errorf("request %+v", got)
	}
	if d := got.Deadline.Sub(before); d < 10*time.Minute-time.Second || d > 10*time.Minute+time.Second {
		t.Errorf("deadline in %s, want the rule's 10m", d)
	}
}

// A session grant covers at most the risk it was given for: arguments that
// escalate the call (force, cascade, a "*" namespace) are asked again, and
// calls at or below the granted risk stay covered.
func TestGateGrantCoversOnlyItsRisk(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	write := risktest.Eff(risk.CategoryMutate, risk.RiskLow, risk.BlastItem, risk.ApprovalSingle, 1)
	tests := []struct {
		name        string
		granted     string // arguments of the call the grant was given on
		later       string
		wantGranted bool
	}{
		{"same risk", `{"id":1}`, `{"id":2}`, true},
		{"force raises the risk", `{"id":1}`, `{"id":2,"force":true}`, false},
		{"cascade raises the risk", `{"id":1}`, `{"opts":{"cascade":"yes"}}`, false},
		{"wildcard namespace widens the blast radius", `{"id":1}`, `{"namespace":"*"}`, false},
		{"granted with force covers force", `{"force":true}`, `{"force":1}`, true},
		{"granted with force covers a plain call", `{"force":true}`, `{"id":3}`, true},
		{"granted for a wildcard namespace does not cover force", `{"namespace":"*"}`, `{"force":true}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			g := newGate(t, p, ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
				asked.Add(1)
				return Verdict{Votes: []Vote{{ApproverID: "alice", Decision: VoteAllow, ForSession: req.SessionGrantable}}}, nil
			}))
			c := check(write, tc.granted)
			if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved || g.grants.Len() != 1 {
				t.Fatalf("first call %s, grants %d", res.Outcome, g.grants.Len())
			}
			c.Call.Args = json.RawMessage(tc.later)
			res, err := g.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome == rules.OutcomeGranted; got != tc.wantGranted {
				t.Fatalf("later call %s (asked %d), want granted=%v", res.Outcome, asked.Load(), tc.wantGranted)
			}
			if !tc.wantGranted && (asked.Load() != 2 || res.Outcome != rules.OutcomeApproved) {
				t.Errorf("escalated call: %s, asked %d; want approvers asked again", res.Outcome, asked.Load())
			}
		})
	}
}

func TestRiskWithin(t *testing.T) {
	base := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalSingle, 2, "network")
	raise := func(f func(*risk.Effective)) risk.Effective { e := base.Clone(); f(&e); return e }
	tests := []struct {
		name string
		e    risk.Effective
		want bool
	}{
		{"equal", base, true},
		{"lower risk", raise(func(e *risk.Effective) { e.RiskLevel = risk.RiskLow }), true},
		{"fewer side effects", raise(func(e *risk.Effective) { e.SideEffects = nil }), true},
		{"higher risk", raise(func(e *risk.Effective) { e.RiskLevel = risk.RiskHigh }), false},
		{"wider blast", raise(func(e *risk.Effective) { e.BlastRadius = risk.BlastCluster }), false},
		{"harsher category", raise(func(e *risk.Effective) { e.Category = risk.CategoryDelete }), false},
		{"less reversible", raise(func(e *risk.Effective) { e.Reversibility = risk.ReversibleNone }), false},
		{"more approvers recommended", raise(func(e *risk.Effective) { e.ApprovalRecommendation = risk.ApprovalMulti }), false},
		{"higher trust needed", raise(func(e *risk.Effective) { e.MinTrustLevel = 3 }), false},
		{"trust out of range", raise(func(e *risk.Effective) { e.MinTrustLevel = 0 }), false},
		{"another side effect", raise(func(e *risk.Effective) { e.SideEffects = []string{"network", "email"} }), false},
		{"unknown risk value", raise(func(e *risk.Effective) { e.RiskLevel = "bogus" }), false},
	}
	for _, tc := range tests {
		if got := riskWithin(tc.e, base.Normalize()); got != tc.want {
			t.Errorf("%s: riskWithin = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// identified is an approver voting under one fixed id.
type identified struct {
	id    string
	asked atomic.Int32
}

func (a *identified) ApproverID() string { return a.id }
func (a *identified) Approve(context.Context, *Request) (Verdict, error) {
	a.asked.Add(1)
	return Verdict{Votes: []Vote{{ApproverID: a.id, Decision: VoteAllow}}}, nil
}

// An approver whose only id is the requester's is not asked: its yes could
// not count. The call is refused at once with an explanation for operators.
func TestGateDoesNotAskTheRequester(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	tests := []struct {
		approver string
		asked    bool
	}{
		{"user", false},
		{"User", false},
		{"\uff55ser\u200b", false},
		{"alice", true},
	}
	for _, tc := range tests {
		t.Run(tc.approver, func(t *testing.T) {
			a := &identified{id: tc.approver}
			g := newGate(t, p, a)
			for i := 0; i < 2; i++ { // a retry gets the same explanation
				res, err := g.Check(context.Background(), check(write, `{}`))
				if err != nil {
					t.Fatal(err)
				}
				if got := a.asked.Load() > 0; got != tc.asked {
					t.Fatalf("asked = %v, want %v", got, tc.asked)
				}
				if tc.asked {
					if res.Outcome != rules.OutcomeApproved || res.Explanation != "" {
						t.Errorf("another approver: %s %q", res.Outcome, res.Explanation)
					}
					return
				}
				if res.Outcome != rules.OutcomeRejected || res.Reason != rules.ReasonNoApprover || res.ModelMessage == "" ||
					!strings.Contains(res.Explanation, "cannot approve its own calls") || !strings.Contains(res.Explanation, "subject") {
					t.Errorf("call %d: %s/%s %q", i, res.Outcome, res.Reason, res.Explanation)
				}
				if strings.Contains(res.ModelMessage, "subject") {
					t.Errorf("the model message carries the operators' explanation: %q", res.ModelMessage)
				}
			}
		})
	}
}

// Two Gates of one session on two replicas share grants through a Store:
// a grant given on one covers the next call on the other, for the same
// session and definition only.
func TestGateSharedGrants(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	store := NewMemStore(MemStoreOptions{})
	var asked atomic.Int32
	sessionVote := ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		asked.Add(1)
		return Verdict{Votes: []Vote{{ApproverID: "bob", Decision: VoteAllow, ForSession: req.SessionGrantable}}}, nil
	})
	gate := func() *Gate {
		g, err := NewGate(GateConfig{Policy: p, Approver: sessionVote, Grants: store})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	replicaA, replicaB := gate(), gate()
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	c := check(write, `{"x":1}`)
	if res, _ := replicaA.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved {
		t.Fatalf("first call on A: %s", res.Outcome)
	}
	c.Call.Args = json.RawMessage(`{"x":2}`)
	if res, _ := replicaB.Check(context.Background(), c); res.Outcome != rules.OutcomeGranted || asked.Load() != 1 {
		t.Fatalf("second call on B: %s, asked %d; want granted without asking", res.Outcome, asked.Load())
	}
	other := c
	other.SessionID = "another-session"
	if res, _ := replicaB.Check(context.Background(), other); res.Outcome != rules.OutcomeApproved || asked.Load() != 2 {
		t.Fatalf("another session: %s, asked %d; want asked again", res.Outcome, asked.Load())
	}
	c.ToolDefHash = "sha256:def2"
	if res, _ := replicaA.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved || asked.Load() != 3 {
		t.Fatalf("after a definition change: %s, asked %d; want asked again", res.Outcome, asked.Load())
	}
}
