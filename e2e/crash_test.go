//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/modeltest"
	"github.com/agenthost/agenthost/internal/failpoint"
)

var failpointsBuild struct {
	once sync.Once
	path string
	err  error
}

// failpointsBin is agenthost built with the build tag failpoints (the
// crash points of internal/failpoint), built on first use. Only these
// tests run it; the binary every other test runs, like a release, has no
// crash point.
func failpointsBin(t *testing.T) string {
	t.Helper()
	failpointsBuild.once.Do(func() {
		dir := filepath.Join(filepath.Dir(agenthostBin), "failpoints")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			failpointsBuild.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(dir, exe("agenthost"))
		// Both builds, beside each other: the lean one hands durable
		// runs to the full one.
		cmd := exec.CommandContext(ctx, goCommand(), "build", "-tags", "failpoints", "-o", dir+string(filepath.Separator), "./cmd/agenthost", "./cmd/agenthost/agenthost-full")
		cmd.Dir = moduleRoot
		if output, err := cmd.CombinedOutput(); err != nil {
			failpointsBuild.err = fmt.Errorf("go build -tags failpoints ./cmd/agenthost ./cmd/agenthost/agenthost-full: %w\n%s", err, output)
			return
		}
		failpointsBuild.path = out
	})
	if failpointsBuild.err != nil {
		t.Fatal(failpointsBuild.err)
	}
	return failpointsBuild.path
}

// The binary the tests (and users) run has no crash point: the mechanism
// is compiled out, not just disarmed.
func TestReleaseBinaryHasNoFailpoints(t *testing.T) {
	for _, tc := range []struct {
		bin  string
		want bool
	}{
		{agenthostBin, false},
		{filepath.Join(filepath.Dir(agenthostBin), exe("agenthost-full")), false},
		// The crash points are in the durable engine's paths, which
		// only the full build links.
		{filepath.Join(filepath.Dir(failpointsBin(t)), exe("agenthost-full")), true},
	} {
		data, err := os.ReadFile(tc.bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(data, []byte(failpoint.Env)); got != tc.want {
			t.Errorf("%s holds %s: %v, want %v", tc.bin, failpoint.Env, got, tc.want)
		}
	}
}

// TestCrashWindowsKilledBinary stops the real agenthost binary with
// SIGKILL at each crash point of a durable call (a binary built with
// failpoints kills itself there) and resumes the session with the release
// binary. Sends are counted at the MCP server. Each window ends in its
// documented outcome (docs/durable.md): an idempotent tool is sent again
// once, with the same idempotency key; any other is reported to the model
// as possibly run and audited as "result": "unknown"; nothing is ever sent
// twice silently.
func TestCrashWindowsKilledBinary(t *testing.T) {
	cases := []struct {
		point, tool string
		atKill      int    // sends when the process died
		after       int    // sends after the resume
		told        string // what the model is told of the call
		unknown     bool   // audited as result unknown
	}{
		{point: failpoint.DurableAfterDecision, tool: "write_note", atKill: 0, after: 1, told: "note written"},
		{point: failpoint.DurableAfterLedger, tool: "write_note", atKill: 0, after: 0, told: "may or may not have run", unknown: true},
		{point: failpoint.DurableAfterLedger, tool: "lookup", atKill: 0, after: 1, told: "order 7 found"},
		{point: failpoint.DurableAfterSend, tool: "write_note", atKill: 1, after: 1, told: "may or may not have run", unknown: true},
		{point: failpoint.DurableAfterSend, tool: "lookup", atKill: 1, after: 2, told: "order 7 found"},
		{point: failpoint.DurableAfterResult, tool: "write_note", atKill: 1, after: 1, told: "note written"},
		{point: failpoint.DurableAfterResult, tool: "lookup", atKill: 1, after: 1, told: "order 7 found"},
	}
	fpBin := failpointsBin(t)
	for _, tc := range cases {
		t.Run(tc.point+"/"+tc.tool, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "record.jsonl")
			audit := filepath.Join(dir, "audit.jsonl")
			tools := writeJSON(t, dir, "tools.json", []obj{
				{"name": "write_note", "inputSchema": obj{"type": "object", "properties": obj{"text": obj{"type": "string"}}},
					"annotations": rtRisk("mutate", "medium", "item", "manual", "none"), "x-test": obj{"text": "note written"}},
				{"name": "lookup", "inputSchema": obj{"type": "object", "properties": obj{"id": obj{"type": "string"}}},
					"annotations": withIdempotentHint(rtRisk("read", "low", "item", "auto", "none")), "x-test": obj{"text": "order 7 found"}},
			})
			entry := stdioServer(tools, record)
			entry["trustAnnotations"] = true
			model := ftStartModel(t, modeltest.Script{
				rtCalls(rtCall("c1", "shop__"+tc.tool, `{"id":"7"}`)),
				rtText("Finished."),
			})
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"shop": entry},
				"llm":        model.llm(),
				"approvals":  obj{"noMatch": "allow"},
				"audit":      obj{"path": audit},
			})
			env := []string{"XDG_STATE_HOME=" + filepath.Join(dir, "state")}
			sends := func() []recorded {
				var out []recorded
				for _, r := range withMethod(readRecord(t, record), "tools/call") {
					if strings.Contains(string(r.Message), `"shop__`+tc.tool+`"`) || strings.Contains(string(r.Message), `"`+tc.tool+`"`) {
						out = append(out, r)
					}
				}
				return out
			}

			p := ftStartBinary(t, fpBin, append(env, failpoint.Env+"="+tc.point),
				"--config", cfg, "run", "go", "--save", "--session-id", "crash-1", "--subject", "alice", "--output-format", "stream-json")
			r := p.wait(t, defaultRunTimeout)
			if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the run was not killed at %s:\n%s", tc.point, r)
			}
			if !strings.Contains(r.stderr, "failpoint "+tc.point+" reached") {
				t.Fatalf("the run died elsewhere than at %s:\n%s", tc.point, r)
			}
			if n := len(sends()); n != tc.atKill {
				t.Fatalf("%s was sent %d times before the kill, want %d", tc.tool, n, tc.atKill)
			}

			res := run(t, env, "--config", cfg, "run", "--resume", "crash-1", "--subject", "alice", "--output-format", "stream-json")
			wantCode(t, res, 0)
			if !strings.Contains(res.stdout, "Finished.") {
				t.Fatalf("the resumed turn did not finish:\n%s", res)
			}
			got := sends()
			if len(got) != tc.after {
				t.Fatalf("%s was sent %d times in all, want %d\n%s", tc.tool, len(got), tc.after, res)
			}
			var keys []string
			for _, s := range got {
				var m struct {
					Params struct {
						Meta map[string]any `json:"_meta"`
					} `json:"params"`
				}
				_ = json.Unmarshal(s.Message, &m)
				k, _ := m.Params.Meta[host.IdempotencyKeyMeta].(string)
				if k == "" || (len(keys) > 0 && k != keys[0]) {
					t.Fatalf("the sends carry idempotency keys %q and %q: every send of one call carries the same", keys, k)
				}
				keys = append(keys, k)
			}
			// The model was asked twice: for the call (once, not again on
			// the resume) and after its result, which it was told.
			rec := model.recording(t)
			if len(rec) != 2 {
				t.Fatalf("the model was asked %d times, want 2", len(rec))
			}
			if last := string(rec[1].Body); !strings.Contains(last, tc.told) {
				t.Fatalf("the model was not told %q of the call:\n%s", tc.told, last)
			}
			auditText, err := os.ReadFile(audit)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(auditText), `"result":"unknown"`); got != tc.unknown {
				t.Fatalf("the audit log has a result unknown: %v, want %v\n%s", got, tc.unknown, auditText)
			}
		})
	}
}

// withIdempotentHint adds idempotentHint: true to tool annotations.
func withIdempotentHint(a obj) obj {
	a["idempotentHint"] = true
	return a
}
