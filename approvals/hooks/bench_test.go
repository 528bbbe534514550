package hooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/childproc"
)

// BenchmarkPreTrivialHook is the overhead a trivial PreToolUse hook adds
// to a call: a shell script that reads its input and allows. "hook" runs
// it through Runner.Pre (input JSON, child environment, own session,
// timeout, output parsing); "bare" only starts the same script with the
// same stdin and waits, the floor any hook runner pays. p50-ms is the
// median of the run. docs/PERFORMANCE.md quotes it.
func BenchmarkPreTrivialHook(b *testing.B) {
	dir := b.TempDir()
	p := script(b, dir, "allow.sh", "cat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n")
	r, err := New(Config{PreToolUse: []Group{{Matcher: "mcp__.*", Hooks: []Hook{{Type: "command", Command: p}}}}}, Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	stdin, err := r.input(EventPreToolUse, call, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	median := func(b *testing.B, op func()) {
		b.ReportAllocs()
		var took []time.Duration
		for b.Loop() {
			start := time.Now()
			op()
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
	}
	b.Run("hook", func(b *testing.B) {
		median(b, func() {
			if v := r.Pre(ctx, call); v.Decision != DecisionAllow {
				b.Fatalf("verdict %+v", v)
			}
		})
	})
	// "pinned": the same hook with a sha256 pin, run from the sealed copy
	// of the bytes that were hashed.
	content, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(content)
	pinned, err := New(Config{PreToolUse: []Group{{Matcher: "mcp__.*", Hooks: []Hook{{Type: "command", Command: p, SHA256: hex.EncodeToString(sum[:])}}}}}, Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pinned", func(b *testing.B) {
		median(b, func() {
			if v := pinned.Pre(ctx, call); v.Decision != DecisionAllow {
				b.Fatalf("verdict %+v", v)
			}
		})
	})
	// "supervised" and "supervised-pinned": the same two hooks under a
	// supervisor, as the agenthost CLI runs them: one more process start
	// per call (the supervisor), which starts the hook and ends its tree.
	// The supervisor is the agenthost binary in $AGENTHOST_BENCH_BIN when
	// that is set (as package bench's benchmarks take it), else this test
	// binary.
	sup := testSupervisor
	if dir := os.Getenv("AGENTHOST_BENCH_BIN"); dir != "" {
		sup = &childproc.Supervisor{Path: filepath.Join(dir, "agenthost")}
	}
	for _, tc := range []struct {
		name string
		hook Hook
	}{
		{"supervised", Hook{Type: "command", Command: p}},
		{"supervised-pinned", Hook{Type: "command", Command: p, SHA256: hex.EncodeToString(sum[:])}},
	} {
		supervised, err := New(Config{PreToolUse: []Group{{Matcher: "mcp__.*", Hooks: []Hook{tc.hook}}}}, Options{Dir: dir, Supervisor: sup})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			if sup == nil {
				b.Skip("no supervisor on this system")
			}
			median(b, func() {
				if v := supervised.Pre(ctx, call); v.Decision != DecisionAllow {
					b.Fatalf("verdict %+v", v)
				}
			})
		})
	}
	b.Run("bare", func(b *testing.B) {
		median(b, func() {
			cmd := exec.Command(p)
			cmd.Stdin = bytes.NewReader(stdin)
			if out, err := cmd.Output(); err != nil || len(out) == 0 {
				b.Fatalf("%v %q", err, out)
			}
		})
	})
}
