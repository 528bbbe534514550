package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/rules"
)

func resumableRequest(id string) *approvals.Request {
	return &approvals.Request{ID: id, Resumable: true, SessionID: "s1", Requester: "alice", Server: "db", Tool: "delete_order",
		Arguments: json.RawMessage(`{"id":"7","why":"stale"}`), Approvers: 1, Deadline: time.Now().Add(time.Hour)}
}

// A durable call taken up again finds the request it raised and the votes
// cast meanwhile, whatever the key order of its arguments.
func TestStoreApproverResumesItsRequest(t *testing.T) {
	ctx := context.Background()
	store := approvals.NewMemStore(approvals.MemStoreOptions{})
	if _, err := store.Raise(ctx, resumableRequest("apr_1")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Vote(ctx, "apr_1", approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
		t.Fatal(err)
	}
	req := resumableRequest("apr_1")
	req.Arguments = json.RawMessage(`{"why": "stale", "id": "7"}`)
	v, err := approvals.StoreApprover{Store: store}.Approve(ctx, req)
	if err != nil || len(v.Votes) != 1 || v.Votes[0].ApproverID != "bob" {
		t.Fatalf("resumed verdict %+v, %v", v, err)
	}
	// Without Resumable the id is a duplicate, as before.
	req.Resumable = false
	if _, err := (approvals.StoreApprover{Store: store}).Approve(ctx, req); !errors.Is(err, approvals.ErrDuplicateRequest) {
		t.Fatalf("a plain duplicate: %v", err)
	}
}

// A request taken up again is announced as resumed, not raised anew: the
// people told when it was raised (serve's webhooks) are not told twice.
func TestStoreApproverAnnouncesAResumeOnce(t *testing.T) {
	ctx := context.Background()
	store := approvals.NewMemStore(approvals.MemStoreOptions{})
	var raised, resumed []string
	sa := approvals.StoreApprover{Store: store,
		OnRaised:  func(a approvals.Approval) { raised = append(raised, a.ID) },
		OnResumed: func(a approvals.Approval) { resumed = append(resumed, a.ID) }}
	for range 2 { // the call, then the same call taken up again
		wctx, cancel := context.WithCancelCause(ctx)
		go func() { time.Sleep(50 * time.Millisecond); cancel(approvals.ErrDetached) }()
		if _, err := sa.Approve(wctx, resumableRequest("apr_1")); !errors.Is(err, approvals.ErrDetached) {
			t.Fatalf("detached wait: %v", err)
		}
	}
	if len(raised) != 1 || len(resumed) != 1 {
		t.Fatalf("raised %v, resumed %v; want one of each", raised, resumed)
	}
	// Without OnResumed a resumed request is announced by OnRaised, as before.
	raised = nil
	sa.OnResumed = nil
	wctx, cancel := context.WithCancelCause(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel(approvals.ErrDetached) }()
	if _, err := sa.Approve(wctx, resumableRequest("apr_1")); !errors.Is(err, approvals.ErrDetached) {
		t.Fatalf("detached wait: %v", err)
	}
	if len(raised) != 1 {
		t.Fatalf("raised %v without OnResumed", raised)
	}
}

// A request stored under the id for another call is never taken as this
// call's approval.
func TestStoreApproverRefusesAnotherCallsRequest(t *testing.T) {
	ctx := context.Background()
	for name, change := range map[string]func(*approvals.Request){
		"arguments": func(r *approvals.Request) { r.Arguments = json.RawMessage(`{"id":"8","why":"stale"}`) },
		"big number": func(r *approvals.Request) {
			r.Arguments = json.RawMessage(`{"id":"7","why":"stale","n":12345678901234567891}`)
		},
		"session": func(r *approvals.Request) { r.SessionID = "s2" },
		"subject": func(r *approvals.Request) { r.Requester = "mallory" },
		"tool":    func(r *approvals.Request) { r.Tool = "drop_table" },
		"server":  func(r *approvals.Request) { r.Server = "other" },
	} {
		t.Run(name, func(t *testing.T) {
			store := approvals.NewMemStore(approvals.MemStoreOptions{})
			first := resumableRequest("apr_1")
			if name == "big number" {
				first.Arguments = json.RawMessage(`{"id":"7","why":"stale","n":12345678901234567890}`)
			}
			if _, err := store.Raise(ctx, first); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Vote(ctx, "apr_1", approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
				t.Fatal(err)
			}
			req := resumableRequest("apr_1")
			change(req)
			v, err := approvals.StoreApprover{Store: store}.Approve(ctx, req)
			if !errors.Is(err, approvals.ErrRequestMismatch) || len(v.Votes) != 0 {
				t.Fatalf("verdict %+v, %v; want ErrRequestMismatch", v, err)
			}
		})
	}
}

// A resumed request keeps the deadline it was raised with: past it, the
// verdict is expired (and the store says so), without waiting anew.
func TestStoreApproverResumedKeepsItsDeadline(t *testing.T) {
	ctx := context.Background()
	store := approvals.NewMemStore(approvals.MemStoreOptions{})
	first := resumableRequest("apr_1")
	first.Deadline = time.Now().Add(50 * time.Millisecond)
	if _, err := store.Raise(ctx, first); err != nil {
		t.Fatal(err)
	}
	req := resumableRequest("apr_1") // asks for an hour: the stored deadline wins
	began := time.Now()
	v, err := approvals.StoreApprover{Store: store}.Approve(ctx, req)
	if err != nil || !v.Expired {
		t.Fatalf("verdict %+v, %v; want expired", v, err)
	}
	if waited := time.Since(began); waited > 10*time.Second {
		t.Fatalf("waited %s", waited)
	}
	a, _ := store.Get(ctx, "apr_1")
	if a.State != approvals.StateExpired {
		t.Fatalf("state %s", a.State)
	}
}

// A wait detached by its durable caller (the process is going) leaves the
// request pending; any other end of the wait expires it.
func TestStoreApproverDetachedLeavesTheRequestPending(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  approvals.State
	}{{approvals.ErrDetached, approvals.StatePending}, {context.Canceled, approvals.StateExpired}} {
		store := approvals.NewMemStore(approvals.MemStoreOptions{})
		ctx, cancel := context.WithCancelCause(context.Background())
		raised := make(chan struct{})
		go func() { <-raised; cancel(tc.cause) }()
		_, err := approvals.StoreApprover{Store: store, OnRaised: func(approvals.Approval) { close(raised) }}.Approve(ctx, resumableRequest("apr_1"))
		if err == nil {
			t.Fatalf("%v: no error", tc.cause)
		}
		a, _ := store.Get(context.Background(), "apr_1")
		if a.State != tc.want {
			t.Fatalf("cancelled with %v: the request is %s, want %s", tc.cause, a.State, tc.want)
		}
	}
}

func TestPolicyRevision(t *testing.T) {
	base := rules.Config{Rules: []rules.Rule{{ID: "r", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}}
	p1, err := rules.NewPolicy(base)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := rules.NewPolicy(base)
	changed := base
	changed.Rules = []rules.Rule{{ID: "r", When: rules.Match{Category: []string{"read"}}, Decide: "ask", Approvers: 1}}
	p3, _ := rules.NewPolicy(changed)
	p4, _ := rules.NewManagedPolicy(base, &rules.Managed{MaxTrustLevel: 2})
	if p1.Revision() == "" || p1.Revision() != p2.Revision() {
		t.Fatalf("same config, revisions %q and %q", p1.Revision(), p2.Revision())
	}
	if p3.Revision() == p1.Revision() || p4.Revision() == p1.Revision() {
		t.Fatal("a changed rule or managed policy keeps the revision")
	}
}
