package serve

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/browsertest"
)

// TestApprovalsPageInBrowser drives the approvals page in headless
// Chromium: an approver signs in and sees who she is signed in as and the
// pending request (tool and its description, the conversation it came
// from as the model saw it, masked, the model's arguments, secure
// parameters by name, the risk, why, and the deadline), sees a second
// request appear and vanish when another approver rejects it elsewhere
// (live updates), approves the first for the rest of its session (a
// running turn waits on it; the session's next call of the tool is then
// granted without asking) and sees what she approved. An identity that
// started a turn sees its request without its conversation and cannot
// vote on it.
func TestApprovalsPageInBrowser(t *testing.T) {
	const canary = "CANARY-browser-token-0b7"
	f := newFixture(t, moreIdentities)
	ctx := browsertest.New(t)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		// A step that cannot happen (a vote the server refused leaves its
		// card) fails the test rather than waiting for its deadline.
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}

	s1 := f.createSession(map[string]string{"token": canary})
	turn1 := f.startTurn(s1.ID, `say Deleting row 7 with `+canary+` then call db__delete_rows {"where":"id = 7"}`)
	defer turn1.Body.Close()
	p1 := f.waitPending()
	card1 := `.card[data-id="` + p1.ID + `"]`

	run("sign in and see the request",
		chromedp.Navigate(f.ts.URL+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), aliceToken),
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(card1)),
	)
	if who := get("read who is signed in", chromedp.Text(chromedp.CSS(`#who`))); who != "Signed in as alice." {
		t.Errorf("the page says %q about who is signed in", who)
	}
	text := get("read the card", chromedp.Text(chromedp.CSS(card1)))
	for _, want := range []string{"db / delete_rows", "Deletes the rows that match where.", "carol", `"where": "id = 7"`, "token",
		"category: delete", "riskLevel: high", "asked by rule", "0 of 1", "expires at " + p1.Deadline.Format("2006-01-02T15:04:05Z"),
		`say Deleting row 7 with [REDACTED] then call db__delete_rows {"where":"id = 7"}`, "Deleting row 7 with [REDACTED]",
		"Approve for this session"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "rules: deletes") {
		t.Errorf("the card repeats the rule the reason names:\n%s", text)
	}

	// Live: a request raised now appears, and disappears when bob rejects
	// it through the API, without a reload.
	s2 := f.createSession(map[string]string{"token": "t2"})
	turn2 := f.startTurn(s2.ID, `call db__delete_rows {"where":"id = 8"}`)
	defer turn2.Body.Close()
	p2 := f.waitOther(p1.ID)
	card2 := `.card[data-id="` + p2.ID + `"]`
	run("see the second request appear", chromedp.WaitVisible(chromedp.CSS(card2)))
	if text := get("read the second card", chromedp.Text(chromedp.CSS(card2))); !strings.Contains(text, "(the model wrote nothing before the call)") {
		t.Errorf("a call without the model's text does not say so:\n%s", text)
	}
	if status, body, _ := f.do("POST", "/v1/approvals/"+p2.ID+"/votes", bobToken, map[string]any{"decision": "deny"}); status != 200 {
		t.Fatalf("bob's vote: %d %s", status, body)
	}
	run("see it vanish", chromedp.WaitNotPresent(chromedp.CSS(card2)))
	mustSSE(t, turn2.Body)

	run("approve for the session", chromedp.Click(chromedp.CSS(`button.allow-session[data-id="`+p1.ID+`"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card1)))
	evs := decodeEvents(t, mustSSE(t, turn1.Body))
	if end := evs[len(evs)-1]; end.Result != "done: delete_rows ran" {
		t.Errorf("the turn ended with %+v", end)
	}
	decided := get("read what was decided", chromedp.Text(chromedp.CSS(`#decided`)))
	if want := "Approved db / delete_rows for the rest of session " + s1.ID + " (approval " + p1.ID + ")"; !strings.Contains(decided, want) {
		t.Errorf("the page does not say what was approved: %q, want %q", decided, want)
	}
	_, body, _ := f.do("GET", "/v1/audit?sessionId="+s1.ID, apiToken, nil)
	if !strings.Contains(string(body), `"approvers":[{"id":"alice","decision":"allow"`) {
		t.Errorf("the audit does not attribute the vote to alice: %s", body)
	}
	// The grant: the session's next call of the tool runs without asking.
	again := f.startTurn(s1.ID, `call db__delete_rows {"where":"id = 9"}`)
	defer again.Body.Close()
	granted := false
	for _, e := range decodeEvents(t, mustSSE(t, again.Body)) {
		granted = granted || (e.Type == host.EventApproval && e.Outcome == "granted")
	}
	if !granted {
		t.Error("approving for the session did not grant the session's next call")
	}
	html := get("read the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, canary) {
		t.Error("the page shows the session value")
	}

	// ops starts a turn: signed in, it sees its own request, but neither
	// its conversation nor a way to vote.
	status, body, _ := f.do("POST", "/v1/sessions", opsToken, map[string]any{"subject": "customer-x", "values": map[string]string{"token": "t3"}})
	if status != 201 {
		t.Fatalf("ops's session: %d %s", status, body)
	}
	var s3 sessionInfo
	if err := json.Unmarshal(body, &s3); err != nil {
		t.Fatal(err)
	}
	turn3 := f.startTurnAs(opsToken, s3.ID, `say only voters read this then call db__delete_rows {"where":"id = 10"}`)
	defer turn3.Body.Close()
	p3 := f.waitPending()
	card3 := `.card[data-id="` + p3.ID + `"]`
	run("sign in as ops",
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("agenthost-token", "`+opsToken+`")`),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(card3)),
	)
	text = get("read ops's card", chromedp.Text(chromedp.CSS(card3)))
	if !strings.Contains(text, "You cannot vote on this request") || strings.Contains(text, "only voters read this") || strings.Contains(text, "Approve") {
		t.Errorf("the requester's own card shows its conversation or its vote buttons:\n%s", text)
	}
	wantNoCanary(t, f, canary)
}

// TestApprovalConversationOnlyForVoters: GET /v1/approvals and
// /v1/approvals/{id} give the conversation a call came from (the user's
// last message and the model's text, as the model saw them: the session's
// secret masked) to an approver who may vote on it, and to the identity
// that started the turn (which may not) neither the conversation nor
// mayVote.
func TestApprovalConversationOnlyForVoters(t *testing.T) {
	const canary = "CANARY-conversation-5d1"
	f := newFixture(t, moreIdentities)
	status, body, _ := f.do("POST", "/v1/sessions", opsToken, map[string]any{"subject": "customer-x", "values": map[string]string{"token": canary}})
	if status != 201 {
		t.Fatalf("ops's session: %d %s", status, body)
	}
	var s sessionInfo
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	turn := f.startTurnAs(opsToken, s.ID, `say I use `+canary+` then call db__delete_rows {"where":"id = 1"}`)
	defer turn.Body.Close()
	p := f.waitPending()
	want := &approvals.Conversation{
		UserMessage: `say I use [REDACTED] then call db__delete_rows {"where":"id = 1"}`,
		ModelText:   "I use [REDACTED]",
	}
	// The request as raised (and as a database would keep it) holds the
	// conversation masked already.
	if raw := f.open(); len(raw) != 1 || raw[0].Request.Conversation != *want {
		t.Errorf("the request raised holds the conversation %+v", raw)
	}
	for _, c := range []struct {
		who, token string
		mayVote    bool
		want       *approvals.Conversation
	}{
		{"alice", aliceToken, true, want},
		{"ops", opsToken, false, nil},
	} {
		var list approvalList
		_, body, _ := f.do("GET", "/v1/approvals", c.token, nil)
		if err := json.Unmarshal(body, &list); err != nil || len(list.Approvals) != 1 {
			t.Fatalf("%s's list: %v %s", c.who, err, body)
		}
		var one approvalView
		_, body, _ = f.do("GET", "/v1/approvals/"+p.ID, c.token, nil)
		if err := json.Unmarshal(body, &one); err != nil {
			t.Fatalf("%s's approval: %v %s", c.who, err, body)
		}
		for _, v := range []approvalView{list.Approvals[0], one} {
			if v.MayVote != c.mayVote || !reflect.DeepEqual(v.Conversation, c.want) {
				t.Errorf("%s sees mayVote %v, conversation %+v; want %v, %+v", c.who, v.MayVote, v.Conversation, c.mayVote, c.want)
			}
			if v.Description != "Deletes the rows that match where." {
				t.Errorf("%s sees the description %q", c.who, v.Description)
			}
		}
		if list.Approver != c.who {
			t.Errorf("the list read as %s says approver %q", c.who, list.Approver)
		}
	}
	if status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "deny"}); status != 200 {
		t.Fatalf("alice's vote: %d %s", status, body)
	}
	mustSSE(t, turn.Body)
	wantNoCanary(t, f, canary)
}
