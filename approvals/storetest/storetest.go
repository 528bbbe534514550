// Package storetest is the conformance suite every approvals.Store
// implementation must pass: call Run from the implementation's tests. It
// is a test kit: production code never imports it.
//
// The suite opens several handles ("replicas") on one backend, the way
// replicas of a chat backend share one database, and checks that requests,
// votes, outcomes and grants are shared; that a waiter wakes when another
// replica settles its request; that a quorum completes exactly once under
// 100 concurrent votes from two replicas; that one approver voting twice
// counts once; and that a timeout is recorded as expired, distinct from
// rejected.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Backend sets up one empty backend for a test and returns a function that
// opens a new handle on it (the suite closes each handle it opens). For an
// in-memory store every handle may be the same store.
type Backend func(t *testing.T) (open func(t *testing.T) approvals.Store)

// hangGuard bounds the waits of the suite, so that a store that never
// wakes its waiter fails the test instead of hanging it. It is not a
// timing assertion: a correct store wakes the waiter long before.
const hangGuard = 30 * time.Second

// Run runs the conformance suite against backend.
func Run(t *testing.T, backend Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b approvals.Store)
	}{
		{"RaiseGetRoundTrip", testRoundTrip},
		{"DuplicateAndUnknown", testDuplicateAndUnknown},
		{"QuorumDistinctApprovers", testQuorum},
		{"Veto", testVeto},
		{"VotesThatCannotCount", testInvalidVotes},
		{"ExpireDistinctFromRejected", testExpire},
		{"OverdueRequest", testOverdue},
		{"ListAcrossReplicas", testList},
		{"WaitWakesOnOtherReplica", testWaitWakes},
		{"WaitContextEnds", testWaitContext},
		{"ConcurrentQuorumExactlyOnce", testConcurrentQuorum},
		{"ConcurrentSameApprover", testConcurrentSameApprover},
		{"ConcurrentVetoAndExpire", testConcurrentSettle},
		{"GrantsSharedPerSession", testGrants},
		{"StoreApprover", testStoreApprover},
		{"StoreApproverTimeout", testStoreApproverTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := backend(t)
			a := open(t)
			b := open(t)
			t.Cleanup(func() {
				_ = a.Close()
				_ = b.Close()
			})
			tc.fn(t, a, b)
		})
	}
}

var seq struct {
	mu sync.Mutex
	n  int
}

// request returns a request with every field set, needing n approvers.
func request(n int) *approvals.Request {
	seq.mu.Lock()
	seq.n++
	id := fmt.Sprintf("apr_test%06d_%d", seq.n, time.Now().UnixNano())
	seq.mu.Unlock()
	return &approvals.Request{
		ID:          id,
		SessionID:   "sess-1",
		CallID:      "call-1",
		Requester:   "alice",
		RequestedBy: "backend",
		Server:      "orders",
		Tool:        "delete_order",
		Arguments:   json.RawMessage(`{"id":42,"note":"ünïcode"}`),
		Risk: risk.Effective{Category: risk.CategoryDelete, RiskLevel: risk.RiskMedium, BlastRadius: risk.BlastItem,
			Reversibility: risk.ReversibleNone, SideEffects: []string{"data_loss"}, ApprovalRecommendation: risk.ApprovalSingle, MinTrustLevel: 2},
		Rules:            []string{"deletes"},
		Message:          "deleting needs a second pair of eyes",
		Reason:           "rule deletes",
		Approvers:        n,
		Deadline:         time.Now().Add(time.Hour).UTC(),
		SessionGrantable: n < 2,
		Hints:            []string{"destructiveHint"},
		Conversation:     approvals.Conversation{UserMessage: "delete order 42", ModelText: "Deleting order 42 as asked."},
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return c
}

func mustRaise(t *testing.T, s approvals.Store, req *approvals.Request) approvals.Approval {
	t.Helper()
	a, err := s.Raise(ctx(t), req)
	if err != nil {
		t.Fatalf("Raise: %v", err)
	}
	return a
}

func vote(s approvals.Store, id, who string, allow bool) error {
	_, err := s.Vote(context.Background(), id, approvals.Resolution{ApproverID: who, Allow: allow})
	return err
}

func mustState(t *testing.T, s approvals.Store, id string, want approvals.State) approvals.Approval {
	t.Helper()
	got, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	if got.State != want {
		t.Fatalf("state of %s = %q, want %q (votes %+v)", id, got.State, want, got.Votes)
	}
	return got
}

func testRoundTrip(t *testing.T, a, b approvals.Store) {
	req := request(2)
	raised := mustRaise(t, a, req)
	if raised.ID != req.ID || raised.State != approvals.StatePending || raised.Needed != 2 {
		t.Fatalf("Raise returned %+v", raised)
	}
	got := mustState(t, b, req.ID, approvals.StatePending)
	want, _ := json.Marshal(raised)
	have, _ := json.Marshal(got)
	if string(want) != string(have) {
		t.Errorf("replica B sees\n%s\nwant\n%s", have, want)
	}
	r := got.Request
	if r.Server != req.Server || r.Tool != req.Tool || r.SessionID != req.SessionID || r.Requester != req.Requester || r.RequestedBy != req.RequestedBy ||
		string(r.Arguments) != string(req.Arguments) || !r.Deadline.Equal(req.Deadline) || r.Risk.Category != req.Risk.Category ||
		len(r.Rules) != 1 || r.Message != req.Message || !got.Created.Equal(raised.Created) || got.Settled != (time.Time{}) ||
		r.Conversation != req.Conversation {
		t.Errorf("round trip lost fields: got %+v, raised %+v", got, raised)
	}

	// A request without an id gets one.
	anon := request(1)
	anon.ID = ""
	if a2 := mustRaise(t, a, anon); a2.ID == "" {
		t.Error("Raise of a request without an id returned no id")
	}
}

func testDuplicateAndUnknown(t *testing.T, a, b approvals.Store) {
	req := request(1)
	mustRaise(t, a, req)
	if _, err := b.Raise(ctx(t), req); !errors.Is(err, approvals.ErrDuplicateRequest) {
		t.Errorf("second Raise of %s: %v, want ErrDuplicateRequest", req.ID, err)
	}
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := b.Get(ctx(t), "apr_nope"); return err },
		"Vote":   func() error { return vote(b, "apr_nope", "bob", true) },
		"Expire": func() error { _, err := b.Expire(ctx(t), "apr_nope"); return err },
		"Wait":   func() error { _, err := b.Wait(ctx(t), "apr_nope"); return err },
	} {
		if err := call(); !errors.Is(err, approvals.ErrUnknownApproval) {
			t.Errorf("%s of an unknown id: %v, want ErrUnknownApproval", name, err)
		}
	}
}

func testQuorum(t *testing.T, a, b approvals.Store) {
	req := request(2)
	mustRaise(t, a, req)
	if err := vote(b, req.ID, "bob", true); err != nil {
		t.Fatalf("bob: %v", err)
	}
	for _, same := range []string{"bob", "Bob", "\uff42\uff4f\uff42", " BOB "} {
		if err := vote(a, req.ID, same, true); !errors.Is(err, approvals.ErrDuplicateVote) {
			t.Errorf("allow by %q after bob: %v, want ErrDuplicateVote", same, err)
		}
	}
	// An invisible character makes no second approver: the id is refused.
	for _, hidden := range []string{"bob\u200b", "bob\u034f", "bob\u3164", "bob\ufe0f", "bob\u2800"} {
		if err := vote(a, req.ID, hidden, true); !errors.Is(err, approvals.ErrInvalidApproverID) {
			t.Errorf("allow by %q after bob: %v, want ErrInvalidApproverID", hidden, err)
		}
	}
	mustState(t, a, req.ID, approvals.StatePending)
	got, err := a.Vote(ctx(t), req.ID, approvals.Resolution{ApproverID: "carol", Allow: true, Note: "fine"})
	if err != nil || got.State != approvals.StateApproved {
		t.Fatalf("carol: state %q, err %v; want approved", got.State, err)
	}
	if len(got.Votes) != 2 || got.Votes[0].ApproverID != "bob" || got.Votes[1].ApproverID != "carol" || got.Votes[1].Note != "fine" {
		t.Errorf("votes %+v, want bob then carol (with her note)", got.Votes)
	}
	settled := mustState(t, b, req.ID, approvals.StateApproved)
	if settled.Settled.IsZero() {
		t.Error("settled approval has no settled time")
	}
	if err := vote(b, req.ID, "dave", false); !errors.Is(err, approvals.ErrAlreadyResolved) {
		t.Errorf("late deny: %v, want ErrAlreadyResolved", err)
	}
	mustState(t, a, req.ID, approvals.StateApproved)
}

func testVeto(t *testing.T, a, b approvals.Store) {
	req := request(2)
	mustRaise(t, a, req)
	if err := vote(a, req.ID, "bob", true); err != nil {
		t.Fatal(err)
	}
	got, err := b.Vote(ctx(t), req.ID, approvals.Resolution{ApproverID: "Bob", Allow: false, Note: "changed my mind"})
	if err != nil || got.State != approvals.StateRejected {
		t.Fatalf("veto by the same approver: state %q, err %v; want rejected", got.State, err)
	}
	v := got.Verdict()
	if v.Expired || len(v.Votes) != 2 || v.Votes[1].Decision != approvals.VoteDeny || v.Votes[1].Note != "changed my mind" {
		t.Errorf("verdict %+v", v)
	}
}

func testInvalidVotes(t *testing.T, a, b approvals.Store) {
	multi := request(2)
	mustRaise(t, a, multi)
	cases := []struct {
		name string
		r    approvals.Resolution
		want error
	}{
		{"requester", approvals.Resolution{ApproverID: "ALICE", Allow: true}, approvals.ErrSelfApproval},
		{"requester denying", approvals.Resolution{ApproverID: "Alice", Allow: false}, approvals.ErrSelfApproval},
		{"requesting identity", approvals.Resolution{ApproverID: "Backend", Allow: true}, approvals.ErrSelfApproval},
		{"requesting identity in fullwidth letters", approvals.Resolution{ApproverID: "\uff42ackend", Allow: false}, approvals.ErrSelfApproval},
		{"no id", approvals.Resolution{ApproverID: "  ", Allow: true}, approvals.ErrNoApproverID},
		{"format characters only", approvals.Resolution{ApproverID: "\u200b", Allow: true}, approvals.ErrInvalidApproverID},
		{"requester with a word joiner", approvals.Resolution{ApproverID: "ali\u2060ce", Allow: false}, approvals.ErrInvalidApproverID},
		{"requester with a grapheme joiner", approvals.Resolution{ApproverID: "alice\u034f", Allow: true}, approvals.ErrInvalidApproverID},
		{"session grant on a multi-approver request", approvals.Resolution{ApproverID: "bob", Allow: true, ForSession: true}, approvals.ErrSessionGrant},
	}
	for _, tc := range cases {
		if _, err := b.Vote(ctx(t), multi.ID, tc.r); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	got := mustState(t, a, multi.ID, approvals.StatePending)
	if len(got.Votes) != 0 {
		t.Errorf("votes that cannot count were recorded: %+v", got.Votes)
	}

	single := request(1)
	mustRaise(t, a, single)
	got, err := b.Vote(ctx(t), single.ID, approvals.Resolution{ApproverID: "bob", Allow: true, ForSession: true})
	if err != nil || got.State != approvals.StateApproved || !got.Votes[0].ForSession {
		t.Errorf("allow for the session: state %q, votes %+v, err %v", got.State, got.Votes, err)
	}
}

func testExpire(t *testing.T, a, b approvals.Store) {
	req := request(2)
	mustRaise(t, a, req)
	if err := vote(b, req.ID, "bob", true); err != nil {
		t.Fatal(err)
	}
	got, err := a.Expire(ctx(t), req.ID)
	if err != nil || got.State != approvals.StateExpired {
		t.Fatalf("Expire: state %q, err %v", got.State, err)
	}
	if v := got.Verdict(); !v.Expired || len(v.Votes) != 1 {
		t.Errorf("expired verdict %+v, want Expired with bob's vote", v)
	}
	mustState(t, b, req.ID, approvals.StateExpired)
	if err := vote(b, req.ID, "carol", true); !errors.Is(err, approvals.ErrAlreadyResolved) {
		t.Errorf("vote after expiry: %v, want ErrAlreadyResolved", err)
	}

	// Expire leaves a decided request as it was.
	done := request(1)
	mustRaise(t, a, done)
	if err := vote(a, done.ID, "bob", false); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Expire(ctx(t), done.ID); err != nil || got.State != approvals.StateRejected {
		t.Errorf("Expire of a rejected request: state %q, err %v; want rejected unchanged", got.State, err)
	}
}

func testOverdue(t *testing.T, a, b approvals.Store) {
	req := request(1)
	req.Deadline = time.Now().Add(-time.Second)
	mustRaise(t, a, req)
	mustState(t, b, req.ID, approvals.StateExpired)
	list, err := b.List(ctx(t), approvals.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		if p.ID == req.ID {
			t.Errorf("List shows the overdue request %s as open", req.ID)
		}
	}
	if err := vote(b, req.ID, "bob", true); !errors.Is(err, approvals.ErrAlreadyResolved) {
		t.Errorf("vote past the deadline: %v, want ErrAlreadyResolved", err)
	}
	mustState(t, a, req.ID, approvals.StateExpired)
}

func testList(t *testing.T, a, b approvals.Store) {
	first, second, done := request(1), request(1), request(1)
	mustRaise(t, a, first)
	mustRaise(t, b, second)
	mustRaise(t, a, done)
	if err := vote(b, done.ID, "bob", false); err != nil {
		t.Fatal(err)
	}
	open, err := b.List(ctx(t), approvals.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for i, p := range open {
		ids[p.ID] = i
		if p.State != approvals.StatePending {
			t.Errorf("List without Settled returned %s in state %q", p.ID, p.State)
		}
	}
	i1, ok1 := ids[first.ID]
	i2, ok2 := ids[second.ID]
	if !ok1 || !ok2 || i1 > i2 {
		t.Errorf("List = %v; want %s before %s", ids, first.ID, second.ID)
	}
	if _, ok := ids[done.ID]; ok {
		t.Errorf("List without Settled includes the rejected %s", done.ID)
	}
	all, err := a.List(ctx(t), approvals.ListOptions{Settled: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range all {
		found = found || (p.ID == done.ID && p.State == approvals.StateRejected)
	}
	if !found {
		t.Errorf("List with Settled lacks the rejected %s", done.ID)
	}
	limited, err := a.List(ctx(t), approvals.ListOptions{Limit: 1})
	if err != nil || len(limited) != 1 {
		t.Errorf("List with Limit 1: %d items, err %v", len(limited), err)
	}
}

func testWaitWakes(t *testing.T, a, b approvals.Store) {
	req := request(1)
	mustRaise(t, a, req)
	type result struct {
		a   approvals.Approval
		err error
	}
	woke := make(chan result, 1)
	go func() {
		got, err := a.Wait(ctx(t), req.ID)
		woke <- result{got, err}
	}()
	if err := vote(b, req.ID, "bob", true); err != nil {
		t.Fatal(err)
	}
	r := <-woke
	if r.err != nil || r.a.State != approvals.StateApproved || len(r.a.Votes) != 1 {
		t.Fatalf("Wait on A after the vote on B: %+v, %v", r.a, r.err)
	}
	// Waiting on a settled request returns at once.
	if got, err := b.Wait(ctx(t), req.ID); err != nil || got.State != approvals.StateApproved {
		t.Errorf("Wait on a settled request: %q, %v", got.State, err)
	}
}

func testWaitContext(t *testing.T, a, _ approvals.Store) {
	req := request(1)
	mustRaise(t, a, req)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Wait(c, req.ID)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel: %v, want context.Canceled", err)
	}
	mustState(t, a, req.ID, approvals.StatePending)
}

// testConcurrentQuorum: 100 distinct approvers vote at once from two
// replicas on a request needing 40; exactly 40 votes count and exactly one
// of them settles it.
func testConcurrentQuorum(t *testing.T, a, b approvals.Store) {
	const voters, needed = 100, 40
	req := request(needed)
	mustRaise(t, a, req)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counted, settledBy, late := 0, 0, 0
	var other []error
	for i := range voters {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			got, err := s.Vote(context.Background(), req.ID, approvals.Resolution{ApproverID: fmt.Sprintf("approver-%03d", i), Allow: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				counted++
				if got.State == approvals.StateApproved && got.Votes[len(got.Votes)-1].ApproverID == fmt.Sprintf("approver-%03d", i) {
					settledBy++
				}
			case errors.Is(err, approvals.ErrAlreadyResolved):
				late++
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("unexpected vote errors: %v", other)
	}
	if counted != needed || settledBy != 1 || late != voters-needed {
		t.Errorf("counted %d, settled by %d, late %d; want %d, 1, %d", counted, settledBy, late, needed, voters-needed)
	}
	got := mustState(t, b, req.ID, approvals.StateApproved)
	if len(got.Votes) != needed {
		t.Errorf("%d votes stored, want %d", len(got.Votes), needed)
	}
}

// testConcurrentSameApprover: one approver clicking 20 times on two
// replicas counts once.
func testConcurrentSameApprover(t *testing.T, a, b approvals.Store) {
	req := request(2)
	mustRaise(t, a, req)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counted := 0
	for i := range 20 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			err := vote(s, req.ID, "bob", true)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				counted++
			} else if !errors.Is(err, approvals.ErrDuplicateVote) {
				t.Errorf("vote: %v", err)
			}
		})
	}
	wg.Wait()
	got := mustState(t, a, req.ID, approvals.StatePending)
	if counted != 1 || len(got.Votes) != 1 {
		t.Errorf("same approver 20 times: %d counted, %d stored; want 1", counted, len(got.Votes))
	}
}

// testConcurrentSettle: a veto and an expiry race; exactly one wins and
// every replica sees the same outcome.
func testConcurrentSettle(t *testing.T, a, b approvals.Store) {
	for range 10 {
		req := request(1)
		mustRaise(t, a, req)
		var wg sync.WaitGroup
		var vetoErr error
		var expired approvals.Approval
		wg.Go(func() { vetoErr = vote(b, req.ID, "bob", false) })
		wg.Go(func() { expired, _ = a.Expire(context.Background(), req.ID) })
		wg.Wait()
		final := mustState(t, b, req.ID, expired.State)
		switch final.State {
		case approvals.StateRejected:
			if vetoErr != nil {
				t.Errorf("rejected, but the veto returned %v", vetoErr)
			}
		case approvals.StateExpired:
			if !errors.Is(vetoErr, approvals.ErrAlreadyResolved) {
				t.Errorf("expired, but the veto returned %v", vetoErr)
			}
		default:
			t.Errorf("final state %q", final.State)
		}
	}
}

func testGrants(t *testing.T, a, b approvals.Store) {
	ceiling := risk.Effective{Category: risk.CategoryMutate, RiskLevel: risk.RiskMedium, BlastRadius: risk.BlastItem,
		Reversibility: risk.ReversibleManual, SideEffects: []string{}, ApprovalRecommendation: risk.ApprovalSingle, MinTrustLevel: 2}
	g := approvals.Grant{Server: "orders", Tool: "update", DefHash: "h1", Ceiling: ceiling, Created: time.Now().UTC()}
	if _, ok, err := b.GetGrant(ctx(t), "s1", "orders", "update"); ok || err != nil {
		t.Fatalf("grant before any: %v, %v", ok, err)
	}
	if err := a.PutGrant(ctx(t), "s1", g); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.GetGrant(ctx(t), "s1", "orders", "update")
	if err != nil || !ok || got.DefHash != "h1" || got.Ceiling.Category != risk.CategoryMutate || got.Ceiling.MinTrustLevel != 2 {
		t.Fatalf("grant on B: %+v, %v, %v", got, ok, err)
	}
	if _, ok, _ := b.GetGrant(ctx(t), "s2", "orders", "update"); ok {
		t.Error("a grant of session s1 is visible to session s2")
	}
	g.DefHash = "h2"
	if err := b.PutGrant(ctx(t), "s1", g); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.GetGrant(ctx(t), "s1", "orders", "update"); got.DefHash != "h2" {
		t.Errorf("replaced grant has hash %q, want h2", got.DefHash)
	}
	if err := a.RevokeGrant(ctx(t), "s1", "orders", "update"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.GetGrant(ctx(t), "s1", "orders", "update"); ok {
		t.Error("revoked grant still visible")
	}
}

func testStoreApprover(t *testing.T, a, b approvals.Store) {
	raised := make(chan approvals.Approval, 1)
	ap := approvals.StoreApprover{Store: a, OnRaised: func(p approvals.Approval) { raised <- p }}
	type result struct {
		v   approvals.Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := ap.Approve(ctx(t), request(1))
		done <- result{v, err}
	}()
	p := <-raised
	if err := vote(b, p.ID, "bob", true); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.v.Expired || len(r.v.Votes) != 1 || r.v.Votes[0].ApproverID != "bob" {
		t.Errorf("verdict %+v, err %v", r.v, r.err)
	}
}

func testStoreApproverTimeout(t *testing.T, a, b approvals.Store) {
	raised := make(chan approvals.Approval, 1)
	ap := approvals.StoreApprover{Store: a, OnRaised: func(p approvals.Approval) { raised <- p }}
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	var v approvals.Verdict
	go func() {
		var err error
		v, err = ap.Approve(c, request(2))
		done <- err
	}()
	p := <-raised
	if err := vote(b, p.ID, "bob", true); err != nil {
		t.Fatal(err)
	}
	// The vote is stored before the request times out.
	if got := mustState(t, a, p.ID, approvals.StatePending); len(got.Votes) != 1 {
		t.Fatalf("votes %+v", got.Votes)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Approve after its context ended: %v", err)
	}
	if !v.Expired || len(v.Votes) != 1 {
		t.Errorf("verdict %+v, want Expired with bob's vote", v)
	}
	mustState(t, b, p.ID, approvals.StateExpired)
}
