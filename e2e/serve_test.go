package e2e

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agenthost/agenthost/host/modeltest"
	"github.com/agenthost/agenthost/internal/browsertest"
)

// lineWatcher copies a process's output to out and sends the rest of the
// first line that starts with prefix to found.
type lineWatcher struct {
	out    io.Writer
	prefix string
	found  chan<- string
	buf    []byte
	sent   bool
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	_, _ = w.out.Write(p)
	if w.sent {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, w.prefix); ok {
			w.found <- rest
			w.sent, w.buf = true, nil
			return len(p), nil
		}
	}
}

// hookReceiver verifies webhook deliveries as docs/config.md tells
// receivers to: the HMAC of "timestamp.body", a fresh timestamp, and no
// repeated id.
type hookReceiver struct {
	secret    string
	mu        sync.Mutex
	approvals []string // verified deliveries' approval ids
	rejected  []string
	got       chan string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts := r.Header.Get("Agenthost-Webhook-Timestamp")
	mac := hmac.New(sha256.New, []byte(h.secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	sec, err := strconv.ParseInt(ts, 10, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !hmac.Equal([]byte(r.Header.Get("Agenthost-Webhook-Signature")), []byte(want)) || err != nil ||
		time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		h.rejected = append(h.rejected, string(body))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p struct {
		Type     string `json:"type"`
		Approval struct {
			ID           string   `json:"id"`
			Tool         string   `json:"tool"`
			SecureParams []string `json:"secureParams"`
		} `json:"approval"`
	}
	if json.Unmarshal(body, &p) != nil || p.Approval.ID != r.Header.Get("Agenthost-Webhook-Id") {
		h.rejected = append(h.rejected, string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.approvals = append(h.approvals, p.Approval.ID)
	w.WriteHeader(http.StatusNoContent)
	h.got <- p.Approval.ID
}

// TestServeEndToEndFromPython: a Python standard-library client drives
// `agenthost serve` (the real binary, a stdio MCP server, the scripted
// model): it creates a session, runs a turn whose tool call needs
// approval, drops and resumes the event stream; a signed webhook tells
// the test receiver; an approver approves in headless Chromium; the
// client reads the result over SSE, and the audit names the approver.
func TestServeEndToEndFromPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for this test")
	}
	canary := newCanary(t, "serve-session-value")
	const hookSecret = "e2e-hook-secret-4d2a"
	apiToken, aliceToken := "e2e-api-token", "e2e-alice-token"
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

	recv := &hookReceiver{secret: hookSecret, got: make(chan string, 4)}
	hooks := httptest.NewServer(recv)
	defer hooks.Close()

	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("call_del", "db__delete_rows", map[string]any{"where": "id = 7"})),
		rtText("Row 7 is deleted."),
	})
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", []byte(`[
	 {"name": "delete_rows", "inputSchema": {"type": "object", "properties": {"where": {"type": "string"}}},
	  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
	  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 1},
	  "x-test": {"text": "deleted 1 row"}}]`))
	record := filepath.Join(dir, "mcp-record.jsonl")
	cfgPath := writeConfig(t, obj{
		"llm": model.llm(),
		"mcpServers": obj{"db": func() obj {
			s := stdioServer(tools, record)
			s["trustAnnotations"] = true
			return s
		}()},
		"bindings":  []obj{{"server": "db", "params": obj{"token": obj{"session": "token"}}}},
		"approvals": obj{"rules": []obj{{"id": "deletes", "when": obj{"category": []string{"delete"}}, "decide": "ask", "approvers": 1, "timeout": "2m"}}},
		"serve": obj{
			"identities": []obj{
				{"name": "backend", "tokenSHA256": hash(apiToken), "roles": []string{"api"}, "subjects": []string{"carol"}},
				{"name": "alice", "tokenSHA256": hash(aliceToken), "roles": []string{"approver"}},
			},
			"webhooks": []obj{{"url": hooks.URL + "/agenthost", "secret": "${E2E_HOOK_SECRET}"}},
		},
	})
	auditPath := filepath.Join(filepath.Dir(cfgPath), "audit.jsonl")

	// agenthost serve on a free port; it says where once it listens.
	cmd := exec.Command(agenthostBin, "--config", cfgPath, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(baseEnv(t), "E2E_HOOK_SECRET="+hookSecret)
	serveStderr := &syncBuffer{}
	addr := make(chan string, 1)
	cmd.Stderr = &lineWatcher{out: serveStderr, prefix: "agenthost: serving on ", found: addr}
	sp := spawn(t, "agenthost serve", cmd, true)
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-sp.done:
		t.Fatalf("agenthost serve exited: %s", serveStderr.String())
	}

	// The Python backend.
	client := exec.Command(python, filepath.Join("testdata", "serve_client.py"), base)
	client.Env = append(baseEnv(t), "AGENTHOST_TOKEN="+apiToken, "SESSION_VALUE="+canary)
	clientOut, clientErr := &syncBuffer{}, &syncBuffer{}
	client.Stdout, client.Stderr = clientOut, clientErr
	cp := spawn(t, "the Python client", client, false)

	// The webhook arrives, verified; the approver approves in the browser.
	var approvalID string
	select {
	case approvalID = <-recv.got:
	case <-cp.done:
		t.Fatalf("the client ended before any approval was asked:\n%s\n%s\nserve: %s", clientOut.String(), clientErr.String(), serveStderr.String())
	}
	ctx := browsertest.New(t)
	card := `.card[data-id="` + approvalID + `"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), aliceToken),
		chromedp.Click(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(card)),
		chromedp.Click(chromedp.CSS(`button.allow[data-id="`+approvalID+`"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(card)),
	); err != nil {
		t.Fatalf("approving in the browser: %v\nserve: %s", err, serveStderr.String())
	}

	<-cp.done
	out := clientOut.String()
	if cp.err != nil {
		t.Fatalf("the Python client failed: %v\n%s\n%s\nserve: %s", cp.err, out, clientErr.String(), serveStderr.String())
	}
	for _, want := range []string{`"step": "dropped"`, `"type": "tool_result"`, `"approvers": ["alice"]`, `{"step": "done", "result": "Row 7 is deleted."}`} {
		if !strings.Contains(out, want) {
			t.Errorf("the client's output lacks %s:\n%s", want, out)
		}
	}
	recv.mu.Lock()
	if len(recv.rejected) > 0 || len(recv.approvals) != 1 {
		t.Errorf("webhook: verified %v, rejected %v", recv.approvals, recv.rejected)
	}
	recv.mu.Unlock()

	// The MCP server got the session value; nothing else did.
	rec, err := os.ReadFile(record)
	if err != nil || !strings.Contains(string(rec), canary) {
		t.Errorf("the MCP server did not receive the session value (%v)", err)
	}
	terminate(cmd)
	<-sp.done
	audit, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(audit), `"approvers":[{"id":"alice","decision":"allow"`) {
		t.Errorf("the audit file does not name alice:\n%s", audit)
	}
	for what, text := range map[string]string{"the client's output": out, "serve's stderr": serveStderr.String(), "the audit file": string(audit)} {
		if strings.Contains(text, canary) {
			t.Errorf("%s holds the session value", what)
		}
		if strings.Contains(text, hookSecret) || strings.Contains(text, aliceToken) || strings.Contains(text, apiToken) {
			t.Errorf("%s holds a secret or a token", what)
		}
	}
	model.wantNoFailures(t)
}
