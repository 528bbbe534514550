package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestCrossSiteVotesUnderMutualTLS: a browser attaches a client
// certificate to any site's requests, so a vote by certificate counts only
// when it is same-origin JSON carrying the page's CSRF token. The
// reviewer's request (text/plain, Origin https://evil.example, body
// {"decision":"allow"}) is refused and counts nothing.
func TestCrossSiteVotesUnderMutualTLS(t *testing.T) {
	m := startMutualTLS(t)
	f := m.f
	s := f.createSession(map[string]string{"token": "t"})
	turn := f.startTurn(s.ID, `call db__delete_rows {"where":"id = 3"}`)
	defer turn.Body.Close()
	p := f.waitPending()
	cookie := csrfCookieOf(t, m.dora, m.base)
	const allow = `{"decision":"allow"}`
	tests := []struct {
		name       string
		hdr        map[string]string
		withCookie bool
		want       int
		kind       string
	}{
		{"the reviewer's cross-site form", map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, true, 403, "cross_origin"},
		{"cross-site JSON", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example", csrfHeader: cookie.Value}, true, 403, "cross_origin"},
		{"Sec-Fetch-Site cross-site", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", csrfHeader: cookie.Value}, true, 403, "cross_origin"},
		{"Sec-Fetch-Site same-site", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site", csrfHeader: cookie.Value}, true, 403, "cross_origin"},
		{"text/plain without Origin", map[string]string{"Content-Type": "text/plain", csrfHeader: cookie.Value}, true, 415, "unsupported_media_type"},
		{"no Content-Type", map[string]string{csrfHeader: cookie.Value}, true, 415, "unsupported_media_type"},
		{"form encoding", map[string]string{"Content-Type": "application/x-www-form-urlencoded", csrfHeader: cookie.Value}, true, 415, "unsupported_media_type"},
		{"no CSRF token", map[string]string{"Content-Type": "application/json"}, true, 403, "csrf"},
		{"a token but no cookie", map[string]string{"Content-Type": "application/json", csrfHeader: cookie.Value}, false, 403, "csrf"},
		{"a token other than the cookie's", map[string]string{"Content-Type": "application/json", csrfHeader: strings.Repeat("A", len(cookie.Value))}, true, 403, "csrf"},
		{"same-origin with the token", map[string]string{"Content-Type": "application/json; charset=utf-8", "Sec-Fetch-Site": "same-origin",
			"Origin": m.base, csrfHeader: cookie.Value}, true, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == 200 && len(f.open()) != 1 {
				t.Fatal("a refused vote settled the request")
			}
			req, _ := http.NewRequest("POST", m.base+"/v1/approvals/"+p.ID+"/votes", strings.NewReader(allow))
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			if tc.withCookie {
				req.AddCookie(cookie)
			}
			resp, err := m.dora.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f.record("POST", "/v1/approvals/"+p.ID+"/votes", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			var e apiError
			_ = json.Unmarshal(body, &e)
			if resp.StatusCode != tc.want || e.Error.Kind != tc.kind {
				t.Fatalf("status %d %s, want %d %q", resp.StatusCode, body, tc.want, tc.kind)
			}
		})
	}
	evs := decodeEvents(t, mustSSE(t, turn.Body))
	if end := evs[len(evs)-1]; end.Result != "done: delete_rows ran" {
		t.Errorf("the turn ended with %+v", end)
	}
	_, body, _ := f.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil)
	if !strings.Contains(string(body), `"approvers":[{"id":"dora","decision":"allow"`) {
		t.Errorf("the audit does not hold dora's one vote: %s", body)
	}
}

// TestCrossSiteGuard: every state-changing route refuses what a browser
// marks cross-origin and bodies that are not JSON, before it authenticates;
// a browser's request needs the page's CSRF token; a bearer-token client
// that is not a browser needs none; serve.publicURL is an origin of the
// server's own.
func TestCrossSiteGuard(t *testing.T) {
	f := newFixture(t, func(c *config.Serve) { c.PublicURL = "https://approvals.example" })
	kept := f.createSession(nil)
	status, _, hdr := f.do("GET", "/approvals", "", nil)
	if status != 200 {
		t.Fatalf("page: %d", status)
	}
	var cookie string
	for _, c := range (&http.Response{Header: hdr}).Cookies() {
		if c.Name == csrfCookiePlain {
			cookie = c.Name + "=" + c.Value
			if again, _, hdr2 := f.doWith("GET", "/approvals", "", nil, http.Header{"Cookie": {cookie}}); again != 200 || hdr2.Get("Set-Cookie") != "" {
				t.Errorf("a second page load replaced the CSRF cookie (%d): tabs opened before would stop working", again)
			}
			cookie += "; other=x"
			hdr.Set(csrfHeader, c.Value)
		}
	}
	if cookie == "" {
		t.Fatal("no CSRF cookie")
	}
	token := hdr.Get(csrfHeader)
	newSession := map[string]any{"subject": "carol"}
	tests := []struct {
		name, method, path, token string
		hdr                       http.Header
		want                      int
		kind                      string
	}{
		{"cross-origin create", "POST", "/v1/sessions", apiToken, http.Header{"Origin": {"https://evil.example"}}, 403, "cross_origin"},
		{"cross-origin create, unauthenticated", "POST", "/v1/sessions", "", http.Header{"Origin": {"https://evil.example"}}, 403, "cross_origin"},
		{"cross-site delete", "DELETE", "/v1/sessions/" + kept.ID, apiToken, http.Header{"Sec-Fetch-Site": {"cross-site"}}, 403, "cross_origin"},
		{"cross-site turn", "POST", "/v1/sessions/" + kept.ID + "/turns", apiToken, http.Header{"Sec-Fetch-Site": {"cross-site"}}, 403, "cross_origin"},
		{"text/plain create", "POST", "/v1/sessions", apiToken, http.Header{"Content-Type": {"text/plain"}}, 415, "unsupported_media_type"},
		{"text/plain turn", "POST", "/v1/sessions/" + kept.ID + "/turns", apiToken, http.Header{"Content-Type": {"text/plain"}}, 415, "unsupported_media_type"},
		{"a browser without the token", "POST", "/v1/sessions", apiToken, http.Header{"Sec-Fetch-Site": {"same-origin"}}, 403, "csrf"},
		{"a browser's delete without the token", "DELETE", "/v1/sessions/" + kept.ID, apiToken, http.Header{"Origin": {f.ts.URL}}, 403, "csrf"},
		{"a browser with the token", "POST", "/v1/sessions", apiToken, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Cookie": {cookie}, csrfHeader: {token}}, 201, ""},
		{"the public URL's origin with the token", "POST", "/v1/sessions", apiToken, http.Header{"Origin": {"https://approvals.example"}, "Cookie": {cookie}, csrfHeader: {token}}, 201, ""},
		{"not a browser", "POST", "/v1/sessions", apiToken, nil, 201, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == "POST" {
				body = newSession
			}
			status, data, _ := f.doWith(tc.method, tc.path, tc.token, body, tc.hdr)
			var e apiError
			_ = json.Unmarshal(data, &e)
			if status != tc.want || e.Error.Kind != tc.kind {
				t.Fatalf("status %d %s, want %d %q", status, data, tc.want, tc.kind)
			}
		})
	}
	if status, _, _ := f.do("GET", "/v1/sessions/"+kept.ID, apiToken, nil); status != 200 {
		t.Errorf("a refused delete deleted the session: %d", status)
	}
	if f.calls.String() != "" {
		t.Errorf("a refused turn ran: %q", f.calls.String())
	}
}
