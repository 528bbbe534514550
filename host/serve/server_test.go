package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

func TestAuthentication(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name, method, path, token string
		want                      int
	}{
		{"health needs nothing", "GET", "/healthz", "", 200},
		{"readiness needs nothing", "GET", "/readyz", "", 200},
		{"document needs nothing", "GET", "/openapi.yaml", "", 200},
		{"page needs nothing", "GET", "/approvals", "", 200},
		{"no token", "POST", "/v1/sessions", "", 401},
		{"unknown token", "POST", "/v1/sessions", "not-a-token", 401},
		{"token hash is not a token", "POST", "/v1/sessions", hashHex(apiToken), 401},
		{"approver cannot create sessions", "POST", "/v1/sessions", aliceToken, 403},
		{"api caller cannot list approvals", "GET", "/v1/approvals", apiToken, 403},
		{"api caller cannot vote", "POST", "/v1/approvals/apr_x/votes", apiToken, 403},
		{"approver lists approvals", "GET", "/v1/approvals", aliceToken, 200},
		{"api caller creates a session", "POST", "/v1/sessions", apiToken, 201},
		{"unknown route", "GET", "/v2/nothing", apiToken, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "POST" {
				body = map[string]any{}
			}
			status, data, hdr := f.do(tc.method, tc.path, tc.token, body)
			if status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, data)
			}
			if status == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// Tokens never come back: not in answers, not in logs.
	for _, token := range []string{apiToken, aliceToken, "not-a-token"} {
		wantNoCanary(t, f, token)
	}
}

func TestRequestValidation(t *testing.T) {
	f := newFixture(t, nil)
	s := f.createSession(nil)
	tests := []struct {
		name, method, path string
		body               any
		want               int
		kind               string
	}{
		{"trust level out of range", "POST", "/v1/sessions", map[string]any{"trustLevel": 9}, 400, "invalid_request"},
		{"unknown field", "POST", "/v1/sessions", map[string]any{"subjet": "x"}, 400, "invalid_request"},
		{"values not strings", "POST", "/v1/sessions", map[string]any{"values": map[string]any{"a": 1}}, 400, "invalid_request"},
		{"empty message", "POST", "/v1/sessions/" + s.ID + "/turns", map[string]any{"message": " "}, 400, "invalid_request"},
		{"negative maxSteps", "POST", "/v1/sessions/" + s.ID + "/turns", map[string]any{"message": "hi", "maxSteps": -1}, 400, "invalid_request"},
		{"unknown session", "GET", "/v1/sessions/ses_nope", nil, 404, "not_found"},
		{"turn of unknown session", "POST", "/v1/sessions/ses_nope/turns", map[string]any{"message": "hi"}, 404, "not_found"},
		{"unknown turn", "GET", "/v1/sessions/" + s.ID + "/turns/turn_nope/events", nil, 404, "not_found"},
		{"audit without session", "GET", "/v1/audit", nil, 400, "invalid_request"},
		{"audit bad limit", "GET", "/v1/audit?sessionId=x&limit=0", nil, 400, "invalid_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, data, _ := f.do(tc.method, tc.path, apiToken, tc.body)
			if status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, data)
			}
			var e apiError
			if err := json.Unmarshal(data, &e); err != nil || e.Error.Kind != tc.kind {
				t.Errorf("body %s, want error kind %q", data, tc.kind)
			}
		})
	}
	voteTests := []struct {
		name string
		body any
		want int
	}{
		{"bad decision", map[string]any{"decision": "maybe"}, 400},
		{"unknown approval", map[string]any{"decision": "allow"}, 404},
		{"note too long", map[string]any{"decision": "deny", "note": strings.Repeat("n", 1001)}, 400},
	}
	for _, tc := range voteTests {
		t.Run(tc.name, func(t *testing.T) {
			if status, data, _ := f.do("POST", "/v1/approvals/apr_nope/votes", aliceToken, tc.body); status != tc.want {
				t.Fatalf("status %d, want %d: %s", status, tc.want, data)
			}
		})
	}
}

// wireEvent is an event as a client decodes it.
type wireEvent struct {
	Type    host.EventType  `json:"type"`
	Outcome string          `json:"outcome"`
	Result  string          `json:"result"`
	Reason  string          `json:"reason"`
	IsError *bool           `json:"isError"`
	Content json.RawMessage `json:"content"`
	// approval_requested
	Server     string `json:"server"`
	Tool       string `json:"tool"`
	ApprovalID string `json:"approvalId"`
	Deadline   string `json:"deadline"`
	RiskLevel  string `json:"riskLevel"`
	// tool_task, and the approval of a task's question
	TaskID string `json:"taskId"`
}

func (e wireEvent) Failed() bool { return e.IsError != nil && *e.IsError }

func decodeEvents(t *testing.T, evs []parsedEvent) []wireEvent {
	t.Helper()
	out := make([]wireEvent, len(evs))
	for i, e := range evs {
		if err := json.Unmarshal([]byte(e.data), &out[i]); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, e.data)
		}
		if string(out[i].Type) != e.name {
			t.Errorf("event %d is named %q but its type is %q", i, e.name, out[i].Type)
		}
	}
	return out
}

func isEnd(e parsedEvent) bool { return e.name == string(host.EventSessionEnd) }

// TestTurnWithApproval runs a turn whose tool call needs one approver: the
// approver sees the request (secure parameters by name), votes, and the
// stream carries the result; the audit record names the approver; the
// session value never comes back.
func TestTurnWithApproval(t *testing.T) {
	f := newFixture(t, nil)
	const canary = "CANARY-session-token-5f1e"
	s := f.createSession(map[string]string{"token": canary})
	if !slices.Equal(s.ValueNames, []string{"token"}) || s.Subject != "carol" || s.TrustLevel != 2 {
		t.Fatalf("session = %+v", s)
	}
	resp := f.startTurn(s.ID, `call db__delete_rows {"where":"id = 7"}`)
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/v1/sessions/"+s.ID+"/turns/turn_") {
		t.Errorf("Location = %q", loc)
	}
	events := make(chan []parsedEvent, 1)
	go func() {
		evs, _ := readSSE(resp.Body, isEnd)
		events <- evs
	}()

	p := f.waitPending()
	status, body, _ := f.do("GET", "/v1/approvals/"+p.ID, aliceToken, nil)
	if status != 200 {
		t.Fatalf("show approval: %d %s", status, body)
	}
	var shown approvalView
	if err := json.Unmarshal(body, &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Tool != "delete_rows" || shown.Server != "db" || shown.Requester != "carol" || shown.SessionID != s.ID ||
		!slices.Equal(shown.SecureParams, []string{"token"}) || shown.Needed != 1 || string(shown.Risk.Category) != "delete" ||
		!slices.Equal(shown.Rules, []string{"deletes"}) {
		t.Errorf("approval = %s", body)
	}
	status, body, _ = f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"})
	if status != 200 {
		t.Fatalf("vote: %d %s", status, body)
	}
	var vr voteResult
	_ = json.Unmarshal(body, &vr)
	if vr.Approver != "alice" || !vr.Settled || !vr.Counted {
		t.Errorf("vote result = %s", body)
	}
	if status, body, _ = f.do("POST", "/v1/approvals/"+p.ID+"/votes", bobToken, map[string]any{"decision": "allow"}); status != 409 {
		t.Errorf("late vote: %d %s, want 409", status, body)
	}

	parsed := <-events
	wantIDs(t, parsed, 1)
	evs := decodeEvents(t, parsed)
	var types []string
	for _, e := range evs {
		types = append(types, string(e.Type))
	}
	want := []string{"session_start", "tool_call", "approval_requested", "approval", "tool_result", "assistant", "session_end"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	// The question, before its answer: the pending approval to vote on.
	if asked := evs[2]; asked.ApprovalID != p.ID || asked.Deadline == "" || asked.RiskLevel == "" || asked.Server != "db" || asked.Tool != "delete_rows" {
		t.Errorf("approval_requested %+v does not name the pending approval %s", asked, p.ID)
	}
	if evs[3].Outcome != string(rules.OutcomeApproved) || evs[6].Result != "done: delete_rows ran" {
		t.Errorf("approval %+v, end %+v", evs[3], evs[6])
	}
	if got := f.calls.String(); got != "delete_rows \""+canary+"\"\n" {
		t.Errorf("the server got %q; want the call with the session's token", got)
	}

	status, body, _ = f.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil)
	if status != 200 {
		t.Fatalf("audit: %d %s", status, body)
	}
	var audit auditAnswer
	if err := json.Unmarshal(body, &audit); err != nil {
		t.Fatal(err)
	}
	if len(audit.Records) == 0 {
		t.Fatal("no audit records")
	}
	dec := audit.Records[0]
	if dec.Outcome != rules.OutcomeApproved || len(dec.Approvers) != 1 || dec.Approvers[0].ApproverID != "alice" ||
		!slices.Equal(dec.SecureParams, []string{"token"}) {
		t.Errorf("decision record = %+v", dec)
	}
	wantNoCanary(t, f, canary)
}

// wantIDs: the events are numbered from first, one by one.
func wantIDs(t *testing.T, evs []parsedEvent, first int64) {
	t.Helper()
	for i, e := range evs {
		if e.id != first+int64(i) {
			t.Fatalf("event %d (%s) has id %d, want %d", i, e.name, e.id, first+int64(i))
		}
	}
}

// wantNoCanary: no answer the fixture saw and no log line holds canary.
func wantNoCanary(t *testing.T, f *fixture, canary string) {
	t.Helper()
	seenMu.Lock()
	defer seenMu.Unlock()
	for _, r := range seen {
		if strings.Contains(string(r.body), canary) {
			t.Errorf("%s %s answered with the canary: %s", r.method, r.path, r.body)
		}
	}
	if strings.Contains(f.logs.String(), canary) {
		t.Errorf("the logs hold the canary:\n%s", f.logs.String())
	}
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVotesCountDistinctIdentities(t *testing.T) {
	f := newFixture(t, nil)
	s := f.createSession(nil)
	resp := f.startTurn(s.ID, `call db__drop_table {"table":"t"}`)
	defer resp.Body.Close()
	p := f.waitPending()
	if p.Needed != 2 {
		t.Fatalf("needed = %d, want 2", p.Needed)
	}
	steps := []struct {
		token   string
		want    int
		settled bool
	}{
		{aliceToken, 200, false},
		{aliceToken, 409, false}, // alice again: counts once
		{bobToken, 200, true},
	}
	for i, st := range steps {
		status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", st.token, map[string]any{"decision": "allow"})
		if status != st.want {
			t.Fatalf("vote %d: %d %s, want %d", i, status, body, st.want)
		}
		if status == 200 {
			var vr voteResult
			_ = json.Unmarshal(body, &vr)
			if vr.Settled != st.settled {
				t.Errorf("vote %d: settled = %v, want %v", i, vr.Settled, st.settled)
			}
		}
	}
	evs := decodeEvents(t, mustSSE(t, resp.Body))
	var approval wireEvent
	for _, e := range evs {
		if e.Type == host.EventApproval {
			approval = e
		}
	}
	if approval.Outcome != "approved" {
		t.Fatalf("approval event = %+v", approval)
	}
	_, body, _ := f.do("GET", "/v1/audit?sessionId="+s.ID+"&limit=2", apiToken, nil)
	var audit auditAnswer
	_ = json.Unmarshal(body, &audit)
	var ids []string
	for _, v := range audit.Records[0].Approvers {
		ids = append(ids, v.ApproverID)
	}
	if !slices.Equal(ids, []string{"alice", "bob"}) {
		t.Errorf("approvers = %v, want alice and bob", ids)
	}
}

func mustSSE(t *testing.T, r io.Reader) []parsedEvent {
	t.Helper()
	evs, err := readSSE(r, isEnd)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestSelfApprovalAndDeny(t *testing.T) {
	f := newFixture(t, func(c *config.Serve) {
		c.Identities[1].Name = "carol" // alice's token now names the session's subject
	})
	s := f.createSession(map[string]string{"token": "t"})
	resp := f.startTurn(s.ID, `call db__delete_rows {"where":"1=1"}`)
	defer resp.Body.Close()
	p := f.waitPending()
	if status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"}); status != 403 {
		t.Fatalf("self approval: %d %s, want 403", status, body)
	}
	if status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", bobToken, map[string]any{"decision": "deny", "note": "not today"}); status != 200 {
		t.Fatalf("deny: %d %s", status, body)
	}
	evs := decodeEvents(t, mustSSE(t, resp.Body))
	for _, e := range evs {
		if e.Type == host.EventToolResult && !e.Failed() {
			t.Errorf("a denied call has a successful result: %+v", e)
		}
		if e.Type == host.EventApproval && e.Outcome != "rejected" {
			t.Errorf("approval outcome %q, want rejected", e.Outcome)
		}
	}
	if f.calls.String() != "" {
		t.Errorf("the server was called: %q", f.calls.String())
	}
}

// TestResumeWithLastEventID: a client that drops the stream while the turn
// waits for approval, then reconnects with Last-Event-ID, gets every later
// event exactly once, and a replay from 0 gives the whole turn.
func TestResumeWithLastEventID(t *testing.T) {
	f := newFixture(t, nil)
	s := f.createSession(map[string]string{"token": "t"})
	resp := f.startTurn(s.ID, `call db__delete_rows {"where":"id = 1"}`)
	loc := resp.Header.Get("Location")
	first, err := readSSE(resp.Body, func(e parsedEvent) bool { return e.name == "tool_call" })
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the client goes away while the turn waits
	wantIDs(t, first, 1)
	p := f.waitPending()
	if status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", bobToken, map[string]any{"decision": "allow"}); status != 200 {
		t.Fatalf("vote: %d %s", status, body)
	}

	resume := func(header, query string) []parsedEvent {
		req, _ := http.NewRequest("GET", f.ts.URL+loc+query, nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		if header != "" {
			req.Header.Set("Last-Event-ID", header)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("resume: %d %s", resp.StatusCode, readAll(t, resp.Body))
		}
		evs, err := readSSE(resp.Body, nil) // the stream ends after session_end
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	last := first[len(first)-1].id
	rest := resume(strconv.FormatInt(last, 10), "")
	wantIDs(t, rest, last+1)
	all := resume("", "?after=0")
	wantIDs(t, all, 1)
	if got := append(append([]parsedEvent{}, first...), rest...); !slices.Equal(got, all) {
		t.Errorf("first part + resumed part:\n%v\nwhole turn:\n%v", got, all)
	}
	if !isEnd(all[len(all)-1]) {
		t.Errorf("the turn does not end with session_end: %v", all[len(all)-1])
	}
	if status, body, _ := f.do("GET", loc, apiToken, nil); status != 200 || !strings.Contains(string(body), "event: session_end") {
		t.Errorf("replay of an ended turn: %d %s", status, body)
	}
	for _, bad := range []string{"x", "-1", "9223372036854775807", "99999999999999999999"} {
		if status, _, _ := f.do("GET", loc+"?after="+bad, apiToken, nil); status != 400 {
			t.Errorf("after=%s: %d, want 400", bad, status)
		}
	}
}

func TestTurnConflictAndDelete(t *testing.T) {
	f := newFixture(t, nil)
	s := f.createSession(map[string]string{"token": "t"})
	resp := f.startTurn(s.ID, `call db__delete_rows {"where":"x"}`)
	defer resp.Body.Close()
	f.waitPending()
	if status, body, _ := f.do("POST", "/v1/sessions/"+s.ID+"/turns", apiToken, map[string]any{"message": "again"}); status != 409 {
		t.Fatalf("second turn: %d %s, want 409", status, body)
	}
	var info sessionInfo
	_, body, _ := f.do("GET", "/v1/sessions/"+s.ID, apiToken, nil)
	_ = json.Unmarshal(body, &info)
	if info.Turn == nil || !info.Turn.Running {
		t.Errorf("session = %s, want a running turn", body)
	}
	if status, body, _ := f.do("DELETE", "/v1/sessions/"+s.ID, apiToken, nil); status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	evs := decodeEvents(t, mustSSE(t, resp.Body))
	if end := evs[len(evs)-1]; end.Type != host.EventSessionEnd || end.Reason != host.EndInterrupted {
		t.Errorf("last event %+v, want session_end interrupted", end)
	}
	if status, _, _ := f.do("GET", "/v1/sessions/"+s.ID, apiToken, nil); status != 404 {
		t.Errorf("deleted session: %d, want 404", status)
	}
	if len(f.open()) != 0 {
		t.Error("the interrupted turn's approval is still pending")
	}
}

func TestSessionTools(t *testing.T) {
	f := newFixture(t, nil)
	s := f.createSession(map[string]string{"token": "t"})
	status, body, _ := f.do("GET", "/v1/sessions/"+s.ID+"/tools", apiToken, nil)
	if status != 200 {
		t.Fatalf("tools: %d %s", status, body)
	}
	var rep host.CatalogReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Servers) != 1 || len(rep.Servers[0].Tools) != 3 {
		t.Fatalf("report = %s", body)
	}
	for _, tl := range rep.Servers[0].Tools {
		if tl.Name == "lookup" && (tl.Status != host.ToolActive || !slices.Equal(tl.SecureParams, []string{"token"})) {
			t.Errorf("lookup = %+v", tl)
		}
	}
}

// FuzzRequestBodies: whatever a caller sends as a body, the API answers
// with a documented status (never 500) and never panics.
func FuzzRequestBodies(f *testing.F) {
	f.Add("POST", "/v1/sessions", []byte(`{"subject":"s","trustLevel":2,"values":{"a":"b"}}`))
	f.Add("POST", "/v1/sessions", []byte(`{"trustLevel":1e400}`))
	f.Add("POST", "/v1/sessions", []byte(`{"values":{"a":null}} {}`))
	f.Add("POST", "/v1/approvals/apr_x/votes", []byte(`{"decision":"allow","note":"\u0000"}`))
	f.Add("POST", "/v1/approvals/apr_x/votes", []byte(`[`))
	f.Add("POST", "/v1/sessions/x/turns", []byte(`{"message":"hi","maxSteps":99999999999999999999}`))
	f.Add("GET", "/v1/audit?sessionId=%ff&limit=-1", []byte(nil))
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if method != "GET" && method != "POST" && method != "DELETE" {
			return
		}
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n#") {
			return
		}
		req, err := http.NewRequest(method, "http://agenthost"+path, strings.NewReader(string(body)))
		if err != nil {
			return
		}
		token := apiToken
		if strings.HasPrefix(path, "/v1/approvals") {
			token = aliceToken
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		fx.srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("%s %s %q: status %d: %s", method, path, body, rec.Code, rec.Body.String())
		}
	})
}
