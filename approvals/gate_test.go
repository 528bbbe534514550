package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newGate(t *testing.T, p *Policy, a Approver) *Gate {
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

func check(risk Effective, args string) Check {
	return Check{SessionID: "sess", Subject: "user", CallID: "c1",
		Call: Call{Server: "srv", Tool: "tool", Args: json.RawMessage(args), TrustLevel: 3},
		Risk: risk, ToolDefHash: "sha256:def1", ExposedName: "srv__tool", SecureParams: []string{"token"}}
}

func TestGateOutcomes(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	read := eff(CategoryRead, RiskLow, BlastItem, ApprovalNone, 1)
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)
	del := eff(CategoryDelete, RiskHigh, BlastItem, ApprovalSingle, 1)
	wide := eff(CategoryMutate, RiskMedium, BlastGlobal, ApprovalSingle, 1)
	allow := func(id string) Vote { return Vote{ApproverID: id, Decision: VoteAllow} }
	deny := func(id, note string) Vote { return Vote{ApproverID: id, Decision: VoteDeny, Note: note} }
	tests := []struct {
		name     string
		risk     Effective
		approver func(*atomic.Int32) Approver
		outcome  Outcome
		reason   ReasonClass
		asked    int32
	}{
		{"allow rule does not ask", read, func(c *atomic.Int32) Approver { return votes(c) }, OutcomeAutoAllowed, "", 0},
		{"deny rule does not ask", wide, func(c *atomic.Int32) Approver { return votes(c, allow("a"), allow("b")) }, OutcomeDeniedByRule, ReasonPolicy, 0},
		{"trust too low does not ask", eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 5), func(c *atomic.Int32) Approver { return votes(c, allow("a")) }, OutcomeTrustDenied, ReasonTrust, 0},
		{"one approver approves", write, func(c *atomic.Int32) Approver { return votes(c, allow("alice")) }, OutcomeApproved, "", 1},
		{"deny vote rejects", write, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), deny("bob", "no")) }, OutcomeRejected, ReasonDeclined, 1},
		{"no votes: no approver", write, func(c *atomic.Int32) Approver { return votes(c) }, OutcomeRejected, ReasonNoApprover, 1},
		{"requester's own vote does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("user")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"anonymous vote does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow(" ")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"same approver twice counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), allow("alice")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"same approver in another case counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("Bob")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"an approver id with a zero-width space does not count", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("bob\u200b")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"same approver in fullwidth letters counts once", del, func(c *atomic.Int32) Approver { return votes(c, allow("bob"), allow("\uff42\uff4f\uff42")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"requester in another case does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("User")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"requester with a format character does not count", write, func(c *atomic.Int32) Approver { return votes(c, allow("\u200duser\u2060 ")) }, OutcomeRejected, ReasonNoApprover, 1},
		{"two distinct approvers approve", del, func(c *atomic.Int32) Approver { return votes(c, allow("alice"), allow("bob")) }, OutcomeApproved, "", 1},
		{"expired verdict", write, func(c *atomic.Int32) Approver {
			return ApproverFunc(func(context.Context, *Request) (Verdict, error) { c.Add(1); return Verdict{Expired: true}, nil })
		}, OutcomeExpired, ReasonTimeout, 1},
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
	p := mustPolicy(t, contractConfig())
	g := newGate(t, p, Auto{})
	res, _ := g.Check(context.Background(), check(eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1), `{}`))
	if res.Outcome != OutcomeApproved || len(res.Votes) != 1 || res.Votes[0].ApproverID != AutoApproverID {
		t.Errorf("single: %s %+v", res.Outcome, res.Votes)
	}
	res, _ = g.Check(context.Background(), check(eff(CategoryDelete, RiskHigh, BlastItem, ApprovalSingle, 1), `{}`))
	if res.Outcome != OutcomeRejected || res.Reason != ReasonNoApprover {
		t.Errorf("multi with auto: %s/%s, want rejected/no_approver", res.Outcome, res.Reason)
	}
	res, _ = newGate(t, p, nil).Check(context.Background(), check(eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1), `{}`))
	if res.Outcome != OutcomeRejected || res.Reason != ReasonNoApprover {
		t.Errorf("default Deny approver: %s/%s", res.Outcome, res.Reason)
	}
}

func TestGateTimeoutAndDenialMemory(t *testing.T) {
	cfg := contractConfig()
	cfg.Rules[1].Timeout = 40 * time.Millisecond
	p := mustPolicy(t, cfg)
	var asked atomic.Int32
	q := NewQueue(QueueOptions{OnPending: func(Pending) { asked.Add(1) }})
	g := newGate(t, p, q)
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)

	start := time.Now()
	res, err := g.Check(context.Background(), check(write, `{"a":1,"b":2}`))
	if err != nil || res.Outcome != OutcomeExpired || res.Reason != ReasonTimeout {
		t.Fatalf("got %s/%s err %v, want expired/timeout", res.Outcome, res.Reason, err)
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Errorf("expired before the rule timeout")
	}
	// The identical call (same arguments in another key order) is answered
	// from memory without asking.
	res, err = g.Check(context.Background(), check(write, `{"b":2, "a":1}`))
	if err != nil || res.Outcome != OutcomeExpired || !res.Remembered || asked.Load() != 1 {
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
	if err != nil || res.Outcome != OutcomeApproved || asked.Load() != 2 {
		t.Errorf("other arguments: %s asked=%d err %v", res.Outcome, asked.Load(), err)
	}
}

func TestGateGrants(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	var asked atomic.Int32
	sessionVote := ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		asked.Add(1)
		return Verdict{Votes: []Vote{{ApproverID: "alice", Decision: VoteAllow, ForSession: req.SessionGrantable}}}, nil
	})
	g := newGate(t, p, sessionVote)
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)

	c := check(write, `{"x":1}`)
	if res, _ := g.Check(context.Background(), c); res.Outcome != OutcomeApproved {
		t.Fatalf("first call %s", res.Outcome)
	}
	c.Call.Args = json.RawMessage(`{"x":2}`)
	if res, _ := g.Check(context.Background(), c); res.Outcome != OutcomeGranted || asked.Load() != 1 {
		t.Fatalf("second call %s asked %d, want granted without asking", res.Outcome, asked.Load())
	}
	// The definition changed: the grant is void, approvers are asked again.
	c.ToolDefHash = "sha256:def2"
	if res, _ := g.Check(context.Background(), c); res.Outcome != OutcomeApproved || asked.Load() != 2 {
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
	del := check(eff(CategoryDelete, RiskHigh, BlastItem, ApprovalSingle, 1), `{}`)
	for i := 0; i < 2; i++ {
		if res, _ := g2.Check(context.Background(), del); res.Outcome != OutcomeApproved {
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
	if res, _ := g2.Check(context.Background(), del); res.Outcome == OutcomeGranted {
		t.Error("grant applied to a multi-approver call")
	}
}

func TestGrants(t *testing.T) {
	g := newSessionGrants()
	low := eff(CategoryMutate, RiskLow, BlastItem, ApprovalSingle, 1)
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
	p := mustPolicy(t, contractConfig())
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)
	boom := errors.New("approver backend down")
	g := newGate(t, p, ApproverFunc(func(context.Context, *Request) (Verdict, error) { return Verdict{}, boom }))
	res, err := g.Check(context.Background(), check(write, `{}`))
	if !errors.Is(err, boom) || res.Outcome != OutcomeError || res.Allowed() || res.ModelMessage == "" {
		t.Errorf("approver error: %s err %v", res.Outcome, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := NewQueue(QueueOptions{OnPending: func(Pending) { cancel() }})
	res, err = newGate(t, p, q).Check(ctx, check(write, `{}`))
	if !errors.Is(err, context.Canceled) || res.Outcome != OutcomeError {
		t.Errorf("cancelled turn: %s err %v", res.Outcome, err)
	}
	if _, err := NewGate(GateConfig{}); err == nil {
		t.Error("NewGate without a policy succeeded")
	}
}

func TestGateRequestCarriesWhatApproversNeed(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	var got *Request
	g := newGate(t, p, ApproverFunc(func(_ context.Context, req *Request) (Verdict, error) {
		got = req
		return Verdict{}, nil
	}))
	c := check(eff(CategoryDelete, RiskHigh, BlastItem, ApprovalSingle, 1), `{"force":true}`)
	before := time.Now()
	res, _ := g.Check(context.Background(), c)
	if got == nil {
		t.Fatal("approver not asked")
	}
	if got.ID == "" || got.ID != res.RequestID || got.SessionID != "sess" || got.Requester != "user" || got.CallID != "c1" ||
		got.Server != "srv" || got.Tool != "tool" || string(got.Arguments) != `{"force":true}` || got.Approvers != 2 ||
		got.Risk.RiskLevel != RiskCritical || len(got.Rules) != 1 || got.Rules[0] != "deletes" || got.SessionGrantable {
		t.Errorf("request %+v", got)
	}
	if d := got.Deadline.Sub(before); d < 10*time.Minute-time.Second || d > 10*time.Minute+time.Second {
		t.Errorf("deadline in %s, want the rule's 10m", d)
	}
}

func TestNewRecord(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	g := newGate(t, p, votes(new(atomic.Int32), Vote{ApproverID: "alice", Decision: VoteAllow, TS: time.Unix(10, 0)}))
	c := check(eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1), `{"q":"x"}`)
	res, _ := g.Check(context.Background(), c)
	rec := NewRecord(c, res, time.Unix(100, 0))
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"ts", "sessionId", "callId", "phase", "server", "tool", "toolDefHash", "exposedName", "arguments",
		"secureParams", "risk", "rules", "decision", "outcome", "approvers", "result", "durationMs"}
	if len(m) != len(want) {
		t.Errorf("keys %v, want exactly %v", keys(m), want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	for k, v := range map[string]string{
		"decision": `"ask"`, "outcome": `"approved"`, "rules": `["writes"]`, "secureParams": `["token"]`,
		"arguments": `{"q":"x"}`, "exposedName": `"srv__tool"`, "toolDefHash": `"sha256:def1"`,
		"approvers": `[{"id":"alice","decision":"allow","ts":"1970-01-01T00:00:10Z"}]`, "result": `"pending"`, "phase": `"decision"`,
	} {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
	denied := NewRecord(c, Result{Decision: Decision{Action: ActionDeny}, Outcome: OutcomeDeniedByRule}, time.Now())
	if denied.Result != ResultNotExecuted || denied.Phase != PhaseDecision {
		t.Errorf("denied call result %q", denied.Result)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A session grant covers at most the risk it was given for: arguments that
// escalate the call (force, cascade, a "*" namespace) are asked again, and
// calls at or below the granted risk stay covered.
func TestGateGrantCoversOnlyItsRisk(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	write := eff(CategoryMutate, RiskLow, BlastItem, ApprovalSingle, 1)
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
			if res, _ := g.Check(context.Background(), c); res.Outcome != OutcomeApproved || g.grants.Len() != 1 {
				t.Fatalf("first call %s, grants %d", res.Outcome, g.grants.Len())
			}
			c.Call.Args = json.RawMessage(tc.later)
			res, err := g.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome == OutcomeGranted; got != tc.wantGranted {
				t.Fatalf("later call %s (asked %d), want granted=%v", res.Outcome, asked.Load(), tc.wantGranted)
			}
			if !tc.wantGranted && (asked.Load() != 2 || res.Outcome != OutcomeApproved) {
				t.Errorf("escalated call: %s, asked %d; want approvers asked again", res.Outcome, asked.Load())
			}
		})
	}
}

func TestRiskWithin(t *testing.T) {
	base := eff(CategoryMutate, RiskMedium, BlastNamespace, ApprovalSingle, 2, "network")
	raise := func(f func(*Effective)) Effective { e := base.clone(); f(&e); return e }
	tests := []struct {
		name string
		e    Effective
		want bool
	}{
		{"equal", base, true},
		{"lower risk", raise(func(e *Effective) { e.RiskLevel = RiskLow }), true},
		{"fewer side effects", raise(func(e *Effective) { e.SideEffects = nil }), true},
		{"higher risk", raise(func(e *Effective) { e.RiskLevel = RiskHigh }), false},
		{"wider blast", raise(func(e *Effective) { e.BlastRadius = BlastCluster }), false},
		{"harsher category", raise(func(e *Effective) { e.Category = CategoryDelete }), false},
		{"less reversible", raise(func(e *Effective) { e.Reversibility = ReversibleNone }), false},
		{"more approvers recommended", raise(func(e *Effective) { e.ApprovalRecommendation = ApprovalMulti }), false},
		{"higher trust needed", raise(func(e *Effective) { e.MinTrustLevel = 3 }), false},
		{"trust out of range", raise(func(e *Effective) { e.MinTrustLevel = 0 }), false},
		{"another side effect", raise(func(e *Effective) { e.SideEffects = []string{"network", "email"} }), false},
		{"unknown risk value", raise(func(e *Effective) { e.RiskLevel = "bogus" }), false},
	}
	for _, tc := range tests {
		if got := riskWithin(tc.e, base.normalize()); got != tc.want {
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
	p := mustPolicy(t, contractConfig())
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)
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
					if res.Outcome != OutcomeApproved || res.Explanation != "" {
						t.Errorf("another approver: %s %q", res.Outcome, res.Explanation)
					}
					return
				}
				if res.Outcome != OutcomeRejected || res.Reason != ReasonNoApprover || res.ModelMessage == "" ||
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
	p := mustPolicy(t, contractConfig())
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
	write := eff(CategoryMutate, RiskMedium, BlastItem, ApprovalSingle, 1)
	c := check(write, `{"x":1}`)
	if res, _ := replicaA.Check(context.Background(), c); res.Outcome != OutcomeApproved {
		t.Fatalf("first call on A: %s", res.Outcome)
	}
	c.Call.Args = json.RawMessage(`{"x":2}`)
	if res, _ := replicaB.Check(context.Background(), c); res.Outcome != OutcomeGranted || asked.Load() != 1 {
		t.Fatalf("second call on B: %s, asked %d; want granted without asking", res.Outcome, asked.Load())
	}
	other := c
	other.SessionID = "another-session"
	if res, _ := replicaB.Check(context.Background(), other); res.Outcome != OutcomeApproved || asked.Load() != 2 {
		t.Fatalf("another session: %s, asked %d; want asked again", res.Outcome, asked.Load())
	}
	c.ToolDefHash = "sha256:def2"
	if res, _ := replicaA.Check(context.Background(), c); res.Outcome != OutcomeApproved || asked.Load() != 3 {
		t.Fatalf("after a definition change: %s, asked %d; want asked again", res.Outcome, asked.Load())
	}
}
