package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestSessionLimitsPerIdentity: one api identity's sessions count against
// serve.maxSessionsPerIdentity, never another's; serve.maxSessions still
// bounds them all; a deleted session frees its owner's share.
func TestSessionLimitsPerIdentity(t *testing.T) {
	const otherToken, thirdToken = "other-api-token", "third-api-token"
	f := newFixture(t, func(c *config.Serve) {
		c.MaxSessions, c.MaxSessionsPerIdentity = 5, 2
		c.Identities = append(c.Identities,
			config.Identity{Name: "other", TokenSHA256: hashHex(otherToken), Roles: []string{config.RoleAPI}},
			config.Identity{Name: "third", TokenSHA256: hashHex(thirdToken), Roles: []string{config.RoleAPI}})
	})
	var created []string // by apiToken
	steps := []struct {
		name, token string
		delete      bool // delete apiToken's first session instead
		want        int
	}{
		{"first of its own", apiToken, false, 201},
		{"second of its own", apiToken, false, 201},
		{"third is past its share", apiToken, false, 429},
		{"another identity is unaffected", otherToken, false, 201},
		{"another identity's second", otherToken, false, 201},
		{"a third identity's first", thirdToken, false, 201},
		{"past serve.maxSessions", thirdToken, false, 429},
		{"deleting frees the share", apiToken, true, 204},
		{"and serve.maxSessions' room", apiToken, false, 201},
	}
	for _, st := range steps {
		var status int
		var body []byte
		if st.delete {
			status, body, _ = f.do("DELETE", "/v1/sessions/"+created[0], apiToken, nil)
		} else {
			status, body, _ = f.do("POST", "/v1/sessions", st.token, map[string]any{})
		}
		if status != st.want {
			t.Fatalf("%s: %d %s, want %d", st.name, status, body, st.want)
		}
		if status == 201 && st.token == apiToken {
			var info sessionInfo
			_ = json.Unmarshal(body, &info)
			created = append(created, info.ID)
		}
	}
}

// TestReadinessHidesCountsFromOthers: /readyz gives the number of sessions
// to api callers only.
func TestReadinessHidesCountsFromOthers(t *testing.T) {
	f := newFixture(t, nil)
	f.createSession(nil)
	tests := []struct {
		name, token string
		want        *int
	}{
		{"unauthenticated", "", nil},
		{"an unknown token", "not-a-token", nil},
		{"an approver", aliceToken, nil},
		{"an api caller", apiToken, new(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := f.do("GET", "/readyz", tc.token, nil)
			var got map[string]json.RawMessage
			if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil {
				t.Fatalf("%d %s", status, body)
			}
			n, has := got["sessions"]
			switch {
			case tc.want == nil && has:
				t.Fatalf("the answer discloses the number of sessions: %s", body)
			case tc.want != nil && string(n) != "1":
				t.Fatalf("sessions %s, want %d: %s", n, *tc.want, body)
			}
		})
	}
}

// TestApprovalStreamsPerIdentity: past serve.maxApprovalStreamsPerIdentity
// an approver's new streams are refused with 429; another approver's
// streams are neither refused nor closed, and every open stream still gets
// the notices; a stream that ends frees its identity's share.
func TestApprovalStreamsPerIdentity(t *testing.T) {
	f := newFixture(t, func(c *config.Serve) { c.MaxApprovalStreamsPerIdentity = 2 })
	open := func(token string) (*http.Response, int) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.ts.URL+"/v1/approvals/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f.record("GET", "/v1/approvals/events", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp, resp.StatusCode
	}
	steps := []struct {
		name, token string
		want        int
	}{
		{"alice's first", aliceToken, 200},
		{"alice's second", aliceToken, 200},
		{"alice's third is past her share", aliceToken, 429},
		{"bob's first", bobToken, 200},
		{"bob's second", bobToken, 200},
	}
	var streams []*bufio.Reader
	for _, st := range steps {
		resp, status := open(st.token)
		if status != st.want {
			t.Fatalf("%s: %d, want %d", st.name, status, st.want)
		}
		if resp != nil {
			streams = append(streams, bufio.NewReader(resp.Body))
		}
	}
	f.srv.watch.publish("pending", "apr_x")
	for i, br := range streams {
		evs, err := readSSE(br, func(parsedEvent) bool { return true })
		if err != nil || len(evs) != 1 || evs[0].name != "pending" {
			t.Fatalf("stream %d: %v, %v; want the pending notice", i, evs, err)
		}
	}
	f.srv.watch.mu.Lock()
	for ch, who := range f.srv.watch.subs {
		if who == "alice" {
			f.srv.watch.dropLocked(ch) // as when the stream ends
			break
		}
	}
	f.srv.watch.mu.Unlock()
	if _, status := open(aliceToken); status != 200 {
		t.Fatalf("after one of alice's streams ended: %d, want 200", status)
	}
}
