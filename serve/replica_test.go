package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestReplicasForwardByIDPrefix: two replicas; a session and its approval
// live on b, and every request for them sent to a is answered by b.
func TestReplicasForwardByIDPrefix(t *testing.T) {
	a := newFixture(t, func(c *config.Serve) { c.Replica.ID = "a" })
	b := newFixture(t, func(c *config.Serve) { c.Replica.ID = "b" })
	a.srv.peers = map[string]string{"b": b.ts.URL}
	b.srv.peers = map[string]string{"a": a.ts.URL}

	s := b.createSession(map[string]string{"token": "t"})
	if !strings.HasPrefix(s.ID, "b-ses_") {
		t.Fatalf("session id %q does not name its replica", s.ID)
	}
	if status, body, _ := a.do("GET", "/v1/sessions/"+s.ID, apiToken, nil); status != 200 || !strings.Contains(string(body), s.ID) {
		t.Fatalf("a showing b's session: %d %s", status, body)
	}
	if status, _, _ := a.do("GET", "/v1/sessions/"+s.ID, "", nil); status != 401 {
		t.Errorf("forwarding skipped authentication: %d", status)
	}
	resp := a.startTurn(s.ID, `call db__delete_rows {"where":"id = 4"}`) // through a
	defer resp.Body.Close()
	p := b.waitPending()
	if !strings.HasPrefix(p.ID, "b-apr_") {
		t.Fatalf("approval id %q does not name its replica", p.ID)
	}
	_, body, _ := a.do("GET", "/v1/approvals", aliceToken, nil)
	var list approvalList
	if err := json.Unmarshal(body, &list); err != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != p.ID {
		t.Fatalf("a's approvals list = %s, want b's pending approval", body)
	}
	if status, body, _ := a.do("GET", "/v1/approvals/"+p.ID, aliceToken, nil); status != 200 {
		t.Fatalf("a showing b's approval: %d %s", status, body)
	}
	if status, body, _ := a.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"}); status != 200 {
		t.Fatalf("vote through a: %d %s", status, body)
	}
	evs := decodeEvents(t, mustSSE(t, resp.Body))
	if end := evs[len(evs)-1]; end.Result != "done: delete_rows ran" {
		t.Errorf("turn through a ended with %+v", end)
	}
	if status, body, _ := a.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil); status != 200 || !strings.Contains(string(body), `"id":"alice"`) {
		t.Errorf("a's audit of b's session: %d %s", status, body)
	}
	// A replica that is down: 502, not a hang or a wrong answer.
	a.srv.peers = map[string]string{"b": "http://127.0.0.1:1"}
	if status, body, _ := a.do("GET", "/v1/sessions/"+s.ID, apiToken, nil); status != http.StatusBadGateway {
		t.Errorf("unreachable owner: %d %s, want 502", status, body)
	}
}
