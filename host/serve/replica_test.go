package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/pgtest"
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

// TestReplicasShareThePostgreSQLStore: two replicas on one PostgreSQL
// approvals.store. Sessions stay where they were created (requests for them
// are forwarded), but approvals need no forwarding: either replica lists
// every request and takes votes on it, the quorum counts distinct
// identities across replicas, and the waiting turn wakes on its own
// replica.
func TestReplicasShareThePostgreSQLStore(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	useStore := func(c *config.Config) { c.Approvals.Store = dsn }
	a := newFixtureWith(t, func(c *config.Serve) { c.Replica.ID = "a" }, useStore)
	b := newFixtureWith(t, func(c *config.Serve) { c.Replica.ID = "b" }, useStore)
	a.srv.peers = map[string]string{"b": b.ts.URL}
	b.srv.peers = map[string]string{"a": a.ts.URL}
	if !a.srv.shared || !b.srv.shared {
		t.Fatal("the replicas do not use the configured store")
	}
	changed, stop, _ := a.srv.watch.subscribe("test")
	defer stop()

	s := b.createSession(map[string]string{"token": "t"})
	resp := a.startTurn(s.ID, `call db__drop_table {"table":"t"}`) // runs on b, through a
	defer resp.Body.Close()
	p := b.waitPending()
	if strings.HasPrefix(p.ID, "b-") {
		t.Errorf("a request in the shared store is named after its replica: %s", p.ID)
	}
	for ev := range changed { // a learns of b's request from the store
		if ev.typ == "changed" {
			break
		}
	}
	for name, f := range map[string]*fixture{"a": a, "b": b} {
		_, body, _ := f.do("GET", "/v1/approvals", aliceToken, nil)
		var list approvalList
		if err := json.Unmarshal(body, &list); err != nil || len(list.Approvals) != 1 || list.Approvals[0].ID != p.ID {
			t.Fatalf("replica %s lists %s, want the one request once", name, body)
		}
	}
	steps := []struct {
		f     *fixture
		token string
		want  int
	}{
		{a, aliceToken, 200},
		{b, aliceToken, 409}, // alice again, on the other replica: counts once
		{b, bobToken, 200},   // the second identity settles it
		{a, bobToken, 409},   // late
	}
	for i, st := range steps {
		if status, body, _ := st.f.do("POST", "/v1/approvals/"+p.ID+"/votes", st.token, map[string]any{"decision": "allow"}); status != st.want {
			t.Fatalf("vote %d: %d %s, want %d", i, status, body, st.want)
		}
	}
	evs := decodeEvents(t, mustSSE(t, resp.Body))
	if end := evs[len(evs)-1]; end.Result != "done: drop_table ran" {
		t.Fatalf("the turn ended with %+v", end)
	}
	status, body, _ := a.do("GET", "/v1/approvals/"+p.ID, aliceToken, nil)
	var shown approvalView
	if err := json.Unmarshal(body, &shown); status != 200 || err != nil || shown.State != "approved" || len(shown.Votes) != 2 {
		t.Errorf("the settled request: %d %s", status, body)
	}
}

// TestForwardedStreamSurvivesAnEarlyAnswer: the owning replica starts its
// event stream before it has read the forwarded body (as a turn does when
// it answers quickly). The forwarding replica must still pass the whole
// stream through: it once streamed the body on while its own HTTP server
// consumed it, and the upstream connection died mid-stream.
func TestForwardedStreamSurvivesAnEarlyAnswer(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		time.Sleep(20 * time.Millisecond) // the forwarder sees the headers first
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "data: %d %v\n\n", n, err)
	}))
	defer owner.Close()
	a := newFixture(t, func(c *config.Serve) { c.Replica.ID = "a" })
	a.srv.peers = map[string]string{"b": owner.URL}
	big := strings.Repeat("x", 600<<10) // above what an HTTP/1 server discards for a handler
	for i := range 5 {
		status, body, _ := a.do("POST", "/v1/sessions/b-ses_1/turns", apiToken, map[string]any{"message": big})
		want := fmt.Sprintf("data: %d <nil>\n\n", len(big)+len(`{"message":""}`))
		if status != 200 || string(body) != want {
			t.Fatalf("round %d: %d %q, want 200 %q", i, status, body, want)
		}
	}
}
