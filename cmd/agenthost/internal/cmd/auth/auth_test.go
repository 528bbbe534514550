package auth

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/status"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/host/oauth"
)

func TestAuthUsageErrors(t *testing.T) {
	cfg := "mcpServers:\n  local:\n    command: ./server\n"
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"login"}, "name one configured SERVER or pass --url URL"},
		{[]string{"login", "a", "b"}, "name one configured SERVER or pass --url URL"},
		{[]string{"login", "local", "--url", "http://127.0.0.1:1/"}, "name one configured SERVER or pass --url URL"},
		{[]string{"login", "local"}, `server "local" does not use OAuth`},
		{[]string{"login", "nope"}, `no server named "nope" in the config`},
		{[]string{"login", "--url", "nope"}, `--url: "nope" is not an http(s) URL`},
		{[]string{"logout", "--all", "local"}, "--all deletes every token; name no server"},
		{[]string{"logout"}, "name one configured SERVER or pass --url URL"},
		{[]string{"status", "x"}, "unknown command"},
	} {
		f, _ := cmdtest.Factory(t, cfg, "")
		err := cmdtest.Parse(NewCmdAuth(f), tc.args...)
		if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("auth %v: %v (exit %d), want exit 2 saying %q", tc.args, err, cmdtest.Code(err), tc.msg)
		}
	}
}

// Login probes the server first: one that does not answer is exit 6.
func TestLoginUnreachable(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	err := cmdtest.Parse(NewCmdAuth(f), "login", "--url", "http://127.0.0.1:1/mcp", "--timeout", "5s")
	if cmdtest.Code(err) != 6 {
		t.Errorf("login to a closed port: %v (exit %d), want 6", err, cmdtest.Code(err))
	}
}

func TestStatusAndLogoutOnAnEmptyStore(t *testing.T) {
	f, s := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdAuth(f), "status"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Out.String(), "no stored tokens (") {
		t.Errorf("status: %q", s.Out.String())
	}
	path := strings.TrimSuffix(strings.TrimPrefix(s.Out.String(), "no stored tokens ("), ")\n")
	s.Out.Reset()
	if err := cmdtest.Parse(NewCmdAuth(f), "status", "--json"); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = cmdutil.WriteJSON(&want, map[string]any{"file": path, "tokens": []status.Token{}})
	if s.Out.String() != want.String() {
		t.Errorf("status --json\n%s\nwant\n%s", s.Out.String(), want.String())
	}
	s.Out.Reset()
	if err := cmdtest.Parse(NewCmdAuth(f), "logout", "--all"); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "deleted 0 token(s)\n" {
		t.Errorf("logout --all: %q", s.Out.String())
	}
	s.Out.Reset()
	if err := cmdtest.Parse(NewCmdAuth(f), "logout", "--url", "http://127.0.0.1:1/mcp", "--subject", "ann"); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "logged out of http://127.0.0.1:1/mcp for subject \"ann\"\n" {
		t.Errorf("logout --url: %q", s.Out.String())
	}
}

// TestStatusReport: rows are sorted by resource then subject, carry the
// configured name, an expiry in UTC and whether it passed, never a token.
func TestStatusReport(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	entry := func(resource, subject string, expiry time.Time, refresh string) oauth.Entry {
		return oauth.Entry{Key: oauth.Key{Resource: resource, Subject: subject, Issuer: "https://issuer.test"},
			Token: &oauth.Token{AccessToken: "canary-access-token", RefreshToken: refresh, Expiry: expiry}}
	}
	r := status.NewReport("tokens.json", []oauth.Entry{
		entry("https://b.test/mcp", "", time.Time{}, ""),
		entry("https://a.test/mcp", "zed", now.Add(-time.Hour), "r"),
		entry("https://a.test/mcp", "ann", now.Add(time.Hour).In(time.FixedZone("X", 3600)), ""),
	}, map[string]string{"https://a.test/mcp": "shop"}, now)
	var got bytes.Buffer
	_ = cmdutil.WriteJSON(&got, r)
	for _, want := range []string{
		`"file": "tokens.json",`,
		`"server": "shop",` + "\n      \"resource\": \"https://a.test/mcp\",\n      \"subject\": \"ann\"",
		`"expiry": "2026-07-01T13:00:00Z",` + "\n      \"expired\": false,\n      \"scopes\": [],\n      \"refreshable\": false",
		`"subject": "zed"`, `"expired": true`, `"refreshable": true`,
		`"server": "",` + "\n      \"resource\": \"https://b.test/mcp\"", `"expiry": null`,
	} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, got.String())
		}
	}
	if strings.Index(got.String(), `"ann"`) > strings.Index(got.String(), `"zed"`) || strings.Contains(got.String(), "canary") {
		t.Errorf("report:\n%s", got.String())
	}
}
