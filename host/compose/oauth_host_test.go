package compose_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// protectedServer is an MCP test server with a whoami tool behind an
// oauthtest authorization server.
func protectedServer(t *testing.T) (url string, as *oauthtest.Server) {
	t.Helper()
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "whoami",
	  "inputSchema": {"type": "object", "properties": {"subject": {"type": "string"}}},
	  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`),
		Handler: func(_ context.Context, tool string, args, _ map[string]json.RawMessage) (string, bool) {
			return "ok", false
		}})
	if err != nil {
		t.Fatal(err)
	}
	as = oauthtest.New(oauthtest.Options{})
	ts := httptest.NewServer(as.Protect(func() string { return url }, srv.HTTPHandler()))
	url = ts.URL + "/mcp"
	t.Cleanup(func() { ts.Close(); _ = srv.Close(); as.Close() })
	return url, as
}

// backendHost is a host of a backend whose one server, reached by url, is
// protected by OAuth; the backend serves the host's OAuthCallback and its
// own subject is "backend". The test's end closes it.
func backendHost(t *testing.T, url string, m model.LLM) *host.Host {
	t.Helper()
	var h *host.Host
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.OAuthCallback(nil).ServeHTTP(w, r)
	}))
	t.Cleanup(cb.Close)
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"remote": {URL: url, TrustAnnotations: true}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
		}},
	}
	cfg.ApplyDefaults()
	var err error
	h, err = compose.New(context.Background(), cfg, compose.Options{Host: host.Options{Model: m},
		OAuth: compose.OAuthOptions{Subject: "backend", RedirectURI: cb.URL + "/oauth/callback"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// 100 end users of one Host (one shared connection) log in concurrently
// through the backend's redirect handler; each session's call carries its
// own subject's token, checked at the server: every tools/call naming a
// subject came with that subject's token.
func TestHostOAuthSubjectsIsolated(t *testing.T) {
	const subjects = 100
	url, as := protectedServer(t)
	h := backendHost(t, url, nil)
	ctx := context.Background()
	// The backend's own subject lists the tools.
	c, ok := compose.OAuthClient(h, "remote")
	if !ok {
		t.Fatal("no OAuth client for the server")
	}
	if err := c.Login(ctx, oauth.LoginOptions{Subject: "backend", Open: oauthtest.Browser("backend")}); err != nil {
		t.Fatal(err)
	}
	h.Connect(ctx)

	var wg sync.WaitGroup
	errs := make(chan error, subjects)
	for i := range subjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprintf("user-%03d", i)
			s := h.NewSession(host.SessionOptions{Subject: subject})
			defer s.Close()
			args := json.RawMessage(fmt.Sprintf(`{"subject":%q}`, subject))
			_, err := s.CallTool(ctx, "remote", "whoami", args)
			var are *oauth.AuthorizationRequiredError
			if host.KindOf(err) != host.KindAuthorization || !errors.As(err, &are) || are.AuthURL == "" || are.Subject != subject {
				errs <- fmt.Errorf("%s: first call: %v", subject, err)
				return
			}
			if err := oauthtest.Browser(subject)(ctx, are.AuthURL); err != nil {
				errs <- fmt.Errorf("%s: login: %v", subject, err)
				return
			}
			if _, err := s.CallTool(ctx, "remote", "whoami", args); err != nil {
				errs <- fmt.Errorf("%s: call after login: %v", subject, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	calls := 0
	for _, u := range as.Uses() {
		if !strings.Contains(u.Body, `"tools/call"`) {
			continue
		}
		calls++
		var msg struct {
			Params struct {
				Arguments struct{ Subject string } `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(u.Body), &msg); err != nil {
			t.Fatalf("tools/call body: %v", err)
		}
		if msg.Params.Arguments.Subject != u.User {
			t.Errorf("cross-subject token use: the call for %q carried %q's token", msg.Params.Arguments.Subject, u.User)
		}
	}
	if calls != subjects {
		t.Errorf("the server accepted %d tool calls, want %d", calls, subjects)
	}
}

// whoamiModel asks for remote__whoami once per turn, then answers; it keeps
// what it was sent.
type whoamiModel struct {
	mu   sync.Mutex
	seen []string
}

func (m *whoamiModel) Generate(_ context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	m.mu.Lock()
	for _, msg := range req.Messages {
		m.seen = append(m.seen, msg.Content)
	}
	m.mu.Unlock()
	return func(yield func(*model.Response, error) bool) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "Done."}}, nil)
			return
		}
		yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "remote__whoami", Arguments: `{"subject":"alice"}`},
		}}}, nil)
	}
}

// A turn of a subject without a token emits an authorization event with
// the URL for that end user (never shown to the model); once the backend's
// callback completed the login, the next turn's call goes through.
func TestTurnAuthorizationEvent(t *testing.T) {
	url, _ := protectedServer(t)
	m := &whoamiModel{}
	h := backendHost(t, url, m)
	ctx := context.Background()
	c, _ := compose.OAuthClient(h, "remote")
	if err := c.Login(ctx, oauth.LoginOptions{Subject: "backend", Open: oauthtest.Browser("backend")}); err != nil {
		t.Fatal(err)
	}
	h.Connect(ctx)
	s := h.NewSession(host.SessionOptions{Subject: "alice"})
	defer s.Close()

	var authURL string
	var kinds []string
	for ev := range s.Turn(ctx, "who am I?", host.TurnOptions{}) {
		switch ev.Type {
		case host.EventAuthorization:
			if ev.Subject != "alice" || ev.Server != "remote" {
				t.Errorf("authorization event %+v", ev)
			}
			authURL = ev.AuthURL
		case host.EventError:
			kinds = append(kinds, string(ev.Kind))
		}
	}
	if authURL == "" || fmt.Sprint(kinds) != "[authorization]" {
		t.Fatalf("auth URL %q, error kinds %v", authURL, kinds)
	}
	if err := oauthtest.Browser("alice")(ctx, authURL); err != nil {
		t.Fatal(err)
	}
	var results []string
	for ev := range s.Turn(ctx, "again", host.TurnOptions{}) {
		if ev.Type == host.EventToolResult {
			results = append(results, fmt.Sprint(ev.Failed()))
		}
	}
	if fmt.Sprint(results) != "[false]" {
		t.Fatalf("second turn's results (failed?): %v", results)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, text := range m.seen {
		if strings.Contains(text, "authorize?") || strings.Contains(text, "state=") {
			t.Fatalf("the model was sent the authorization URL: %q", text)
		}
	}
}

// A server reached with workload identity federation and DPoP: the
// assertion comes from a command (a real child process), every request
// carries a fresh proof, and both servers' nonces are honoured; the
// assertion never reaches the audit log.
func TestHostJWTBearerWithDPoP(t *testing.T) {
	const assertion = "CANARY.WORKLOAD-ASSERTION.5e2a"
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "whoami", "inputSchema": {"type": "object"},
	  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`),
		Handler: func(context.Context, string, map[string]json.RawMessage, map[string]json.RawMessage) (string, bool) {
			return "ok", false
		}})
	if err != nil {
		t.Fatal(err)
	}
	as := oauthtest.New(oauthtest.Options{DPoP: true, DPoPNonce: true, Assertions: map[string]string{assertion: "workload"}})
	var url string
	ts := httptest.NewServer(as.Protect(func() string { return url }, srv.HTTPHandler()))
	url = ts.URL + "/mcp"
	t.Cleanup(func() { ts.Close(); _ = srv.Close(); as.Close() })
	dir := t.TempDir()
	cmd := filepath.Join(dir, "workload-token")
	if err := os.WriteFile(cmd, []byte("#!/bin/sh\necho '"+assertion+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"remote": {URL: url, TrustAnnotations: true,
			OAuth: &config.OAuth{Grant: config.GrantJWTBearer, AssertionCommand: cmd, DPoP: config.DPoPRequired}}},
		Approvals: rules.Config{Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}},
		Audit:     config.Audit{Path: auditPath},
	}
	h, s := svcSession(t, cfg)
	ctx := context.Background()
	if _, err := s.CallTool(ctx, "remote", "whoami", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if as.Requests("token:urn:ietf:params:oauth:grant-type:jwt-bearer") == 0 || as.Requests("dpop:nonce-as") != 1 || as.Requests("dpop:nonce-rs") != 1 || as.Requests("dpop:replay") != 0 {
		t.Errorf("jwt-bearer grants %d, nonce challenges %d/%d, replays %d", as.Requests("token:urn:ietf:params:oauth:grant-type:jwt-bearer"),
			as.Requests("dpop:nonce-as"), as.Requests("dpop:nonce-rs"), as.Requests("dpop:replay"))
	}
	for _, u := range as.Uses() {
		if u.User != "workload" {
			t.Errorf("a request went out as %q", u.User)
		}
	}
	h.Close()
	audit, _ := os.ReadFile(auditPath)
	if len(audit) == 0 || strings.Contains(string(audit), "CANARY") {
		t.Errorf("the audit log is empty or shows the assertion")
	}
}

// TestHostJWTBearerAssertionCommandRefused: under a managed allowlist
// that admits the server's url but not its assertionCommand, the host
// never runs the command: the call fails for want of a token, and the
// message names the key.
func TestHostJWTBearerAssertionCommandRefused(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "whoami", "inputSchema": {"type": "object"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	as := oauthtest.New(oauthtest.Options{Assertions: map[string]string{"CANARY.ASSERTION.77": "workload"}})
	var url string
	ts := httptest.NewServer(as.Protect(func() string { return url }, srv.HTTPHandler()))
	url = ts.URL + "/mcp"
	t.Cleanup(func() { ts.Close(); _ = srv.Close(); as.Close() })
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	cmd := filepath.Join(dir, "workload-token")
	if err := os.WriteFile(cmd, []byte("#!/bin/sh\ntouch '"+marker+"'\necho CANARY.ASSERTION.77\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"remote": {URL: url,
			OAuth: &config.OAuth{Grant: config.GrantJWTBearer, AssertionCommand: cmd}}},
		Managed: &config.Managed{File: "managed.yaml", AllowedServers: []config.ServerPattern{
			{URL: "http://127.0.0.1:*"}, {Command: "/opt/agenthost-admitted/*"}}},
	}
	_, s := svcSession(t, cfg)
	ctx := context.Background()
	_, err = s.CallTool(ctx, "remote", "whoami", json.RawMessage(`{}`))
	if err == nil || !strings.Contains(err.Error(), "assertionCommand: not allowed by the managed policy") {
		t.Errorf("call: %v; want a failure naming assertionCommand", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the refused assertionCommand ran")
	}
	if as.Requests("token:urn:ietf:params:oauth:grant-type:jwt-bearer") != 0 {
		t.Error("a jwt-bearer grant was requested")
	}
}

// svcSession connects a host of cfg and opens a session for subject svc;
// both close with the test.
func svcSession(t *testing.T, cfg *config.Config) (*host.Host, *host.Session) {
	t.Helper()
	cfg.ApplyDefaults()
	h, err := compose.New(context.Background(), cfg, compose.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	s := h.NewSession(host.SessionOptions{Subject: "svc"})
	t.Cleanup(s.Close)
	return h, s
}
