package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestRunResumeAfterKill: `run` with --approve wait is killed (SIGKILL)
// while its call waits; the call is approved from another process
// (`agenthost approvals approve`); `run --resume` takes the turn up and
// the call runs once, without the model being asked again for it; `run
// --continue` in the same folder continues the conversation; `sessions`
// lists, shows and deletes the session.
func TestRunResumeAfterKill(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	shop := newDurableShop(t, "sqlite:"+filepath.Join(dir, "approvals.db"), "", "XDG_STATE_HOME="+state)
	model := ftStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "shop__delete_order", map[string]any{"id": "7"})),
		rtText("Order 7 is deleted."),
		rtText("You are welcome."),
	})
	// The shop's config plus the model.
	var cfg obj
	raw, err := os.ReadFile(shop.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("the shop's config does not parse: %v", err)
	}
	cfg["llm"] = model.llm()
	shop.cfg = writeConfig(t, cfg)
	work := t.TempDir() // the folder every run runs in (--continue looks here)

	runIn := func(args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), defaultRunTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, agenthostBin, append([]string{"--config", shop.cfg}, args...)...)
		cmd.Dir, cmd.Env = work, append(baseEnv(t), shop.env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}

	p := ftStart(t, shop.env, "--config", shop.cfg, "run", "delete order 7", "--approve", "wait",
		"--session-id", "e2e-s1", "--subject", "alice", "--output-format", "stream-json")
	req := shop.waitForRequest(t, p, "e2e-s1")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if n := shop.executed(t); n != 0 {
		t.Fatalf("the call ran %d times before its approval", n)
	}
	wantCode(t, shop.cli(t, "approvals", "approve", req.ID, "--as", "bob"), 0)

	r := runIn("run", "--resume", "e2e-s1", "--approve", "wait", "--subject", "alice", "--output-format", "stream-json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "Order 7 is deleted.") {
		t.Fatalf("the resumed turn did not finish:\n%s", r)
	}
	if n := shop.executed(t); n != 1 {
		t.Fatalf("the approved call ran %d times, want 1", n)
	}
	if n := len(model.recording(t)); n != 2 {
		t.Fatalf("the model was asked %d times, want 2 (the call, then the answer)", n)
	}

	// --continue in the folder of the last session run: the resumed one.
	r = runIn("run", "--continue", "thanks", "--subject", "alice", "--output-format", "json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "You are welcome.") {
		t.Fatalf("--continue:\n%s", r)
	}
	rec := model.recording(t)
	var last struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(rec[len(rec)-1].Body, &last); err != nil || len(last.Messages) < 5 {
		t.Fatalf("--continue sent the model %d messages (%v), want the whole conversation", len(last.Messages), err)
	}

	r = runIn("sessions", "list", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"e2e-s1"`) {
		t.Fatalf("sessions list:\n%s", r)
	}
	r = runIn("sessions", "show", "e2e-s1")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "user: delete order 7") || !strings.Contains(r.stdout, "order deleted") {
		t.Fatalf("sessions show:\n%s", r)
	}
	wantCode(t, runIn("sessions", "delete", "e2e-s1"), 0)
	wantCode(t, runIn("sessions", "show", "e2e-s1"), 2)
}
