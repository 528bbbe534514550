package durableturn

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		prior      int
		sentErr    error
		task       string
		taskErr    error
		idempotent func() bool
		want       Resend
	}{
		{"first send", 0, nil, "", nil, no, Send},
		{"ledger failed", 0, boom, "", nil, yes, NotRecorded},
		{"task to follow", 1, nil, "t1", nil, no, FollowTask},
		{"task unreadable, idempotent", 1, nil, "t1", boom, yes, SendAgain},
		{"lost, idempotent", 1, nil, "", nil, yes, SendAgain},
		{"lost twice, idempotent", 2, nil, "", nil, yes, MaybeRan},
		{"lost, not idempotent", 1, nil, "", nil, no, MaybeRan},
	} {
		if got := Decide(tc.prior, tc.sentErr, tc.task, tc.taskErr, tc.idempotent); got != tc.want {
			t.Errorf("%s: Decide = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The request id is the one stored approvals were asked under: its form
// must not change, and it binds every part.
func TestRequestID(t *testing.T) {
	a := RequestID("turn/c1", `{"b":1,"a":2}`, "pin", "rev")
	if a != RequestID("turn/c1", `{"a":2,"b":1}`, "pin", "rev") {
		t.Fatal("the same arguments in another order ask under another id")
	}
	if len(a) != len("apr_")+16 || a[:4] != "apr_" {
		t.Fatalf("request id %q", a)
	}
	for _, other := range []string{
		RequestID("turn/c2", `{"a":2,"b":1}`, "pin", "rev"),
		RequestID("turn/c1", `{"a":3,"b":1}`, "pin", "rev"),
		RequestID("turn/c1", `{"a":2,"b":1}`, "pin2", "rev"),
		RequestID("turn/c1", `{"a":2,"b":1}`, "pin", "rev2"),
	} {
		if other == a {
			t.Fatal("a changed part asks under the same id")
		}
	}
}

// A run waiting for its turn's caller gets it once attached; a turn with
// no caller goes to the handler, also one set later.
func TestAttachments(t *testing.T) {
	var a Attachments[string]
	ctx := context.Background()
	got := make(chan *Attachment[string])
	go func() {
		att, _ := a.Wait(ctx, "t1")
		got <- att
	}()
	time.Sleep(10 * time.Millisecond)
	att := NewAttachment("turn", ctx)
	a.Attach("t1", att)
	if w := <-got; w != att {
		t.Fatal("the waiting run got another attachment")
	}
	if !a.Release("t1", att) {
		t.Fatal("a taken attachment released as not taken")
	}
	att.RunEnded()
	att.RunEnded()
	<-att.Ran()

	a.Unattached("t2", TurnRecord{SessionID: "s"})
	handed := make(chan string, 1)
	a.SetHandler(func(id string, rec TurnRecord) { handed <- id + "/" + rec.SessionID })
	if h := <-handed; h != "t2/s" {
		t.Fatalf("handed %q", h)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Wait(cctx, "t3"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on an ended context = %v", err)
	}
}
