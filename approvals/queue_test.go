package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// pendingChan returns a queue whose new approvals arrive on the channel.
func pendingChan(n int) (*Queue, chan Pending) {
	ch := make(chan Pending, n)
	return NewQueue(QueueOptions{OnPending: func(p Pending) { ch <- p }}), ch
}

type approveResult struct {
	v   Verdict
	err error
}

func startApprove(q *Queue, ctx context.Context, req *Request) chan approveResult {
	out := make(chan approveResult, 1)
	go func() {
		v, err := q.Approve(ctx, req)
		out <- approveResult{v, err}
	}()
	return out
}

func TestQueueSameApproverTwiceCountsOnce(t *testing.T) {
	q, pending := pendingChan(1)
	done := startApprove(q, context.Background(), &Request{ID: "r1", Requester: "user", Approvers: 2})
	p := <-pending
	if p.ID != "r1" || p.Needed != 2 {
		t.Fatalf("pending %+v", p)
	}
	if err := q.Resolve("r1", "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	if err := q.Resolve("r1", "alice", true, "again"); !errors.Is(err, ErrDuplicateVote) {
		t.Fatalf("second allow by alice: %v, want ErrDuplicateVote", err)
	}
	if got, ok := q.Get("r1"); !ok || len(got.Votes) != 1 {
		t.Fatalf("still pending with one vote expected, got %+v %v", got, ok)
	}
	if err := q.Resolve("r1", " bob ", true, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.v.Expired || len(r.v.Votes) != 2 || r.v.Votes[0].ApproverID != "alice" || r.v.Votes[1].ApproverID != "bob" {
		t.Fatalf("verdict %+v err %v", r.v, r.err)
	}
	if err := q.Resolve("r1", "carol", false, ""); !errors.Is(err, ErrAlreadyResolved) {
		t.Errorf("late vote: %v, want ErrAlreadyResolved", err)
	}
	if len(q.List()) != 0 {
		t.Errorf("queue not empty: %+v", q.List())
	}
}

func TestQueueVetoSelfAndUnknown(t *testing.T) {
	q, pending := pendingChan(1)
	done := startApprove(q, context.Background(), &Request{ID: "r", Requester: "user", Approvers: 2})
	<-pending
	if err := q.Resolve("r", "user", true, ""); !errors.Is(err, ErrSelfApproval) {
		t.Errorf("self approval: %v", err)
	}
	if err := q.Resolve("r", "", true, ""); !errors.Is(err, ErrNoApproverID) {
		t.Errorf("anonymous vote: %v", err)
	}
	if err := q.Resolve("nope", "alice", true, ""); !errors.Is(err, ErrUnknownApproval) {
		t.Errorf("unknown id: %v", err)
	}
	if err := q.Submit("r", Resolution{ApproverID: "alice", Allow: true, ForSession: true}); !errors.Is(err, ErrSessionGrant) {
		t.Errorf("session grant on non-grantable request: %v", err)
	}
	if err := q.Resolve("r", "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	// alice changes her mind: a deny always vetoes.
	if err := q.Resolve("r", "alice", false, "wrong table"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if len(r.v.Votes) != 2 || r.v.Votes[1].Decision != VoteDeny || r.v.Votes[1].Note != "wrong table" {
		t.Fatalf("verdict %+v", r.v)
	}
}

func TestQueueTimeout(t *testing.T) {
	q, pending := pendingChan(2)
	// Deadline on the request.
	done := startApprove(q, context.Background(), &Request{ID: "d", Approvers: 2, Deadline: time.Now().Add(30 * time.Millisecond)})
	<-pending
	if err := q.Resolve("d", "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !r.v.Expired || len(r.v.Votes) != 1 {
		t.Fatalf("deadline: verdict %+v err %v", r.v, r.err)
	}
	if err := q.Resolve("d", "bob", true, ""); !errors.Is(err, ErrAlreadyResolved) {
		t.Errorf("vote after expiry: %v", err)
	}
	// Context deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	done = startApprove(q, ctx, &Request{ID: "c", Approvers: 1})
	<-pending
	r = <-done
	if !r.v.Expired || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("ctx: verdict %+v err %v", r.v, r.err)
	}
}

func TestQueueDuplicateRequestID(t *testing.T) {
	q, pending := pendingChan(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := startApprove(q, ctx, &Request{ID: "same"})
	<-pending
	if _, err := q.Approve(context.Background(), &Request{ID: "same"}); !errors.Is(err, ErrDuplicateRequest) {
		t.Errorf("duplicate id: %v", err)
	}
	cancel()
	<-done
}

// TestQueueConcurrent: 100 calls wait on the queue at once, each resolved
// from other goroutines by two distinct approvers racing each other and a
// third, late one.
func TestQueueConcurrent(t *testing.T) {
	const calls = 100
	q, pending := pendingChan(calls)
	p := approvaltest.MustPolicy(t, rules.Config{Rules: []rules.Rule{{ID: "two", Decide: "ask", Approvers: 2}}})
	gate, err := NewGate(GateConfig{Policy: p, Approver: q})
	if err != nil {
		t.Fatal(err)
	}
	risk := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)

	var resolvers sync.WaitGroup
	var lateMu sync.Mutex
	late := map[error]int{}
	for i := 0; i < 4; i++ {
		resolvers.Add(1)
		go func() {
			defer resolvers.Done()
			for p := range pending {
				var wg sync.WaitGroup
				for _, who := range []string{"alice", "bob", "carol"} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := q.Resolve(p.ID, who, true, ""); err != nil {
							lateMu.Lock()
							late[errors.Unwrap(err)]++
							lateMu.Unlock()
						}
					}()
				}
				wg.Wait()
			}
		}()
	}

	var callers sync.WaitGroup
	results := make([]Result, calls)
	errs := make([]error, calls)
	for i := 0; i < calls; i++ {
		callers.Add(1)
		go func() {
			defer callers.Done()
			results[i], errs[i] = gate.Check(context.Background(), Check{
				SessionID: "s", Subject: "user", CallID: fmt.Sprint(i),
				Call: rules.Call{Server: "srv", Tool: "update", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), TrustLevel: 3},
				Risk: risk, ToolDefHash: "h",
			})
		}()
	}
	callers.Wait()
	close(pending)
	resolvers.Wait()
	for i := range results {
		if errs[i] != nil || results[i].Outcome != rules.OutcomeApproved {
			t.Errorf("call %d: outcome %s err %v", i, results[i].Outcome, errs[i])
			continue
		}
		ids := map[string]bool{}
		for _, v := range results[i].Votes {
			ids[v.ApproverID] = true
		}
		if len(results[i].Votes) != 2 || len(ids) != 2 {
			t.Errorf("call %d: votes %+v", i, results[i].Votes)
		}
	}
	// The third approver of each call was late.
	if late[ErrAlreadyResolved] != calls || len(late) != 1 {
		t.Errorf("late votes %v, want %d ErrAlreadyResolved", late, calls)
	}
	if n := len(q.List()); n != 0 {
		t.Errorf("%d approvals left pending", n)
	}
}

// Ids are compared normalised: another spelling of the requester is still
// the requester, and another spelling of an approver who allowed is a
// duplicate; an id with an invisible or default-ignorable character is
// refused, never folded into another; the vote keeps the id as given.
func TestQueueNormalisesApproverIDs(t *testing.T) {
	tests := []struct {
		name, first, second string
		err                 error
	}{
		{"case", "bob", "Bob", ErrDuplicateVote},
		{"zero-width space", "bob", "bob\u200b", ErrInvalidApproverID},
		{"combining grapheme joiner", "bob", "bob\u034f", ErrInvalidApproverID},
		{"fullwidth letters", "bob", "\uff42\uff4f\uff42", ErrDuplicateVote},
		{"surrounding space", "bob", "  BOB ", ErrDuplicateVote},
		{"requester in capitals", "bob", "ALICE", ErrSelfApproval},
		{"requester with a word joiner", "bob", "ali\u2060ce", ErrInvalidApproverID},
		{"only format characters", "bob", "\u200b\u200d", ErrNoApproverID},
		{"another person", "bob", "carol", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, pending := pendingChan(1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := startApprove(q, ctx, &Request{ID: "r", Requester: "Alice", Approvers: 2})
			<-pending
			if err := q.Resolve("r", tc.first, true, ""); err != nil {
				t.Fatal(err)
			}
			if err := q.Resolve("r", tc.second, true, ""); !errors.Is(err, tc.err) {
				t.Fatalf("second vote %q: err = %v, want %v", tc.second, err, tc.err)
			}
			cancel()
			r := <-done
			want := 1
			if tc.err == nil {
				want = 2
			}
			if len(r.v.Votes) != want || r.v.Votes[len(r.v.Votes)-1].ApproverID == "" {
				t.Fatalf("votes %+v, want %d", r.v.Votes, want)
			}
			if tc.err == nil && r.v.Votes[1].ApproverID != tc.second {
				t.Errorf("vote id %q, want it as given %q", r.v.Votes[1].ApproverID, tc.second)
			}
		})
	}
}
