package serve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenthost/agenthost/internal/browsertest"
)

// TestApprovalsPageInBrowser drives the approvals page in headless
// Chromium: an approver signs in, sees the pending request (tool, the
// model's arguments, secure parameters by name, the risk and why), sees a
// second request appear and vanish when another approver rejects it
// elsewhere (live updates), and approves the first, which a running turn
// is waiting on.
func TestApprovalsPageInBrowser(t *testing.T) {
	const canary = "CANARY-browser-token-0b7"
	f := newFixture(t, nil)
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
	turn1 := f.startTurn(s1.ID, `call db__delete_rows {"where":"id = 7"}`)
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
	text := get("read the card", chromedp.Text(chromedp.CSS(card1)))
	for _, want := range []string{"db / delete_rows", "carol", `"where": "id = 7"`, "token", "category: delete", "riskLevel: high", "rules: deletes", "0 of 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not show %q:\n%s", want, text)
		}
	}

	// Live: a request raised now appears, and disappears when bob rejects
	// it through the API, without a reload.
	s2 := f.createSession(map[string]string{"token": "t2"})
	turn2 := f.startTurn(s2.ID, `call db__delete_rows {"where":"id = 8"}`)
	defer turn2.Body.Close()
	p2 := f.waitOther(p1.ID)
	card2 := `.card[data-id="` + p2.ID + `"]`
	run("see the second request appear", chromedp.WaitVisible(chromedp.CSS(card2)))
	if status, body, _ := f.do("POST", "/v1/approvals/"+p2.ID+"/votes", bobToken, map[string]any{"decision": "deny"}); status != 200 {
		t.Fatalf("bob's vote: %d %s", status, body)
	}
	run("see it vanish", chromedp.WaitNotPresent(chromedp.CSS(card2)))
	mustSSE(t, turn2.Body)

	run("approve", chromedp.Click(chromedp.CSS(`button.allow[data-id="`+p1.ID+`"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card1)))
	evs := decodeEvents(t, mustSSE(t, turn1.Body))
	if end := evs[len(evs)-1]; end.Result != "done: delete_rows ran" {
		t.Errorf("the turn ended with %+v", end)
	}
	_, body, _ := f.do("GET", "/v1/audit?sessionId="+s1.ID, apiToken, nil)
	if !strings.Contains(string(body), `"approvers":[{"id":"alice","decision":"allow"`) {
		t.Errorf("the audit does not attribute the vote to alice: %s", body)
	}
	html := get("read the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(html, canary) {
		t.Error("the page shows the session value")
	}
	wantNoCanary(t, f, canary)
}
