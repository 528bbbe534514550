package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/config"
)

// More test identities.
const (
	otherToken  = "other-api-token-for-tests"
	opsToken    = "ops-token-for-tests"
	acme1Token  = "acme-1-token-for-tests"
	acme2Token  = "acme-2-token-for-tests"
	tenantToken = "customers-token-for-tests"
)

// moreIdentities: "other", a second API caller; "ops", an API caller that
// approves too and may act for customer-x; acme-1 and acme-2, two API
// callers of one tenant; "customers", which may act for customer-*.
func moreIdentities(c *config.Serve) {
	c.Identities = append(c.Identities,
		config.Identity{Name: "other", TokenSHA256: hashHex(otherToken), Roles: []string{config.RoleAPI}},
		config.Identity{Name: "ops", TokenSHA256: hashHex(opsToken), Roles: []string{config.RoleAPI, config.RoleApprover}, Subjects: []string{"customer-x"}},
		config.Identity{Name: "acme-1", TokenSHA256: hashHex(acme1Token), Roles: []string{config.RoleAPI}, Tenant: "acme"},
		config.Identity{Name: "acme-2", TokenSHA256: hashHex(acme2Token), Roles: []string{config.RoleAPI}, Tenant: "ACME"},
		config.Identity{Name: "customers", TokenSHA256: hashHex(tenantToken), Roles: []string{config.RoleAPI}, Subjects: []string{"customer-*"}},
	)
}

// TestSessionsBelongToTheirOwner: another API identity cannot read a
// session, replay its transcript, read its audit records, run a turn in it
// (with its bound secure value) or delete it: for that identity the session
// does not exist. Identities of one tenant share their sessions.
func TestSessionsBelongToTheirOwner(t *testing.T) {
	f := newFixture(t, moreIdentities)
	const canary = "CANARY-owner-secret-91c4"
	s := f.createSession(map[string]string{"token": canary})
	resp := f.startTurn(s.ID, `call db__lookup {"q":"x"}`)
	mustSSE(t, resp.Body)
	resp.Body.Close()
	_, body, _ := f.do("GET", "/v1/sessions/"+s.ID, apiToken, nil)
	var info sessionInfo
	if err := json.Unmarshal(body, &info); err != nil || info.Turn == nil {
		t.Fatalf("session %s", body)
	}
	before := f.calls.String()
	probes := []struct {
		name, method, path string
		body               any
	}{
		{"read the session", "GET", "/v1/sessions/" + s.ID, nil},
		{"read its tools", "GET", "/v1/sessions/" + s.ID + "/tools", nil},
		{"replay its transcript", "GET", info.Turn.Events + "?after=0", nil},
		{"read its audit records", "GET", "/v1/audit?sessionId=" + s.ID, nil},
		{"run a turn in it", "POST", "/v1/sessions/" + s.ID + "/turns", map[string]any{"message": `call db__lookup {"q":"mine now"}`}},
		{"delete it", "DELETE", "/v1/sessions/" + s.ID, nil},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			status, data, _ := f.do(p.method, p.path, otherToken, p.body)
			if status != 404 || !strings.Contains(string(data), `"not_found"`) {
				t.Fatalf("another identity: %d %s, want 404", status, data)
			}
		})
	}
	// The same answer as for a session that never existed.
	_, foreign, _ := f.do("GET", "/v1/audit?sessionId="+s.ID, otherToken, nil)
	if status, unknown, _ := f.do("GET", "/v1/audit?sessionId=ses_nope", otherToken, nil); status != 404 || string(unknown) != string(foreign) {
		t.Errorf("unknown session: %d %s; another's: %s", status, unknown, foreign)
	}
	if got := f.calls.String(); got != before {
		t.Errorf("another identity's turn called the server: %q", strings.TrimPrefix(got, before))
	}
	for _, path := range []string{"/v1/sessions/" + s.ID, "/v1/audit?sessionId=" + s.ID} {
		if status, data, _ := f.do("GET", path, apiToken, nil); status != 200 {
			t.Errorf("the owner: GET %s: %d %s", path, status, data)
		}
	}
	wantNoCanary(t, f, canary)

	// One tenant's identities share its sessions (tenants compared
	// normalised: "acme" and "ACME" are one).
	status, body, _ := f.do("POST", "/v1/sessions", acme1Token, map[string]any{})
	var shared sessionInfo
	if err := json.Unmarshal(body, &shared); status != 201 || err != nil {
		t.Fatalf("acme-1 creates: %d %s", status, body)
	}
	if status, body, _ := f.do("GET", "/v1/sessions/"+shared.ID, acme2Token, nil); status != 200 {
		t.Errorf("acme-2 reads its tenant's session: %d %s", status, body)
	}
	if status, body, _ := f.do("GET", "/v1/sessions/"+shared.ID, apiToken, nil); status != 404 {
		t.Errorf("backend reads acme's session: %d %s, want 404", status, body)
	}
	if status, body, _ := f.do("DELETE", "/v1/sessions/"+shared.ID, acme2Token, nil); status != 204 {
		t.Errorf("acme-2 deletes its tenant's session: %d %s", status, body)
	}
}

// TestSelfApprovalThroughAChosenSubject: an identity holding both roles
// that creates a session for another subject cannot approve the calls of
// its own turn; the request names it, and another approver can.
func TestSelfApprovalThroughAChosenSubject(t *testing.T) {
	f := newFixture(t, moreIdentities)
	status, body, _ := f.do("POST", "/v1/sessions", opsToken, map[string]any{"subject": "customer-x", "values": map[string]string{"token": "t"}})
	var s sessionInfo
	if err := json.Unmarshal(body, &s); status != 201 || err != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	turn := f.startTurnAs(opsToken, s.ID, `call db__delete_rows {"where":"1=1"}`)
	defer turn.Body.Close()
	p := f.waitPending()
	if p.Requester != "customer-x" || p.RequestedBy != "ops" {
		t.Fatalf("requester %q requested by %q, want customer-x through ops", p.Requester, p.RequestedBy)
	}
	status, body, _ = f.do("POST", "/v1/approvals/"+p.ID+"/votes", opsToken, map[string]any{"decision": "allow"})
	if status != 403 || !strings.Contains(string(body), `"self_approval"`) {
		t.Fatalf("ops approving its own call: %d %s, want 403 self_approval", status, body)
	}
	if len(f.open()) != 1 {
		t.Fatal("the refused vote settled the request")
	}
	if status, body, _ = f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"}); status != 200 {
		t.Fatalf("alice: %d %s", status, body)
	}
	mustSSE(t, turn.Body)
	_, body, _ = f.do("GET", "/v1/audit?sessionId="+s.ID, opsToken, nil)
	var audit auditAnswer
	if err := json.Unmarshal(body, &audit); err != nil || len(audit.Records) == 0 {
		t.Fatalf("audit %s", body)
	}
	var ids []string
	for _, v := range audit.Records[0].Approvers {
		ids = append(ids, v.ApproverID)
	}
	if !slices.Equal(ids, []string{"alice"}) {
		t.Errorf("approvers %v, want alice only", ids)
	}
}

// TestSubjectIsLimitedToTheIdentity: a served session's subject selects
// whose OAuth tokens and credentials its calls use, so an identity may only
// name itself (the default) or what serve.identities[].subjects allow.
func TestSubjectIsLimitedToTheIdentity(t *testing.T) {
	f := newFixture(t, moreIdentities)
	tests := []struct {
		name, token, subject string
		want                 int
		gotSubject           string
	}{
		{"no subject is the caller itself", otherToken, "", 201, "other"},
		{"its own name", otherToken, "other", 201, "other"},
		{"its own name in capitals", otherToken, "Other", 201, "Other"},
		{"another identity's user", otherToken, "carol", 403, ""},
		{"a user who logged in", otherToken, "user-a", 403, ""},
		{"another identity's name", otherToken, "backend", 403, ""},
		{"a listed subject", apiToken, "carol", 201, "carol"},
		{"a listed subject in capitals", apiToken, "CAROL", 201, "CAROL"},
		{"one not listed", apiToken, "carol2", 403, ""},
		{"a glob", tenantToken, "customer-x", 201, "customer-x"},
		{"a glob, another spelling", tenantToken, "Customer-Y", 201, "Customer-Y"},
		{"outside the glob", tenantToken, "user-a", 403, ""},
		{"an invisible character", tenantToken, "customer-x\u034f", 400, ""},
		{"a Hangul filler", otherToken, "other\u3164", 400, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := f.do("POST", "/v1/sessions", tc.token, map[string]any{"subject": tc.subject})
			if status != tc.want {
				t.Fatalf("status %d %s, want %d", status, body, tc.want)
			}
			if status != 201 {
				return
			}
			var s sessionInfo
			if err := json.Unmarshal(body, &s); err != nil || s.Subject != tc.gotSubject {
				t.Fatalf("subject %q (%s), want %q", s.Subject, body, tc.gotSubject)
			}
			// The host session acts for that subject: its OAuth tokens are that subject's.
			f.srv.mu.Lock()
			ss := f.srv.sessions[s.ID]
			f.srv.mu.Unlock()
			if got := ss.sess.Subject(); got != tc.gotSubject {
				t.Errorf("the host session's subject is %q, want %q", got, tc.gotSubject)
			}
		})
	}
}

// TestLiveSessionKeepsItsAudit: the audit log forgets the oldest of
// 10,000 sessions it has seen; a session still alive is its owner's to
// read all the same (its owner is the session's, not the log's note).
func TestLiveSessionKeepsItsAudit(t *testing.T) {
	f := newFixture(t, moreIdentities)
	s := f.createSession(nil)
	for i := range defaultAuditSessions + 1 {
		_ = f.srv.audit.Write(context.Background(), &auditlog.Record{SessionID: fmt.Sprintf("ses_other%d", i)})
	}
	_ = f.srv.audit.Write(context.Background(), &auditlog.Record{SessionID: s.ID, Tool: "lookup"})
	status, body, _ := f.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil)
	if status != 200 || !strings.Contains(string(body), `"lookup"`) {
		t.Fatalf("the owner reading a live session's audit: %d %s", status, body)
	}
	if status, _, _ := f.do("GET", "/v1/audit?sessionId="+s.ID, otherToken, nil); status != 404 {
		t.Errorf("another identity: %d, want 404", status)
	}
}
