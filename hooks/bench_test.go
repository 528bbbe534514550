package hooks

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkPreTrivialHook is the overhead a trivial PreToolUse hook adds
// to a call: a shell script that reads its input and allows.
// docs/PERFORMANCE.md quotes it.
func BenchmarkPreTrivialHook(b *testing.B) {
	dir := b.TempDir()
	p := script(b, dir, "allow.sh", "cat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n")
	r, err := New(Config{PreToolUse: []Group{{Matcher: "mcp__.*", Hooks: []Hook{{Type: "command", Command: p}}}}}, Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if v := r.Pre(ctx, call); v.Decision != DecisionAllow {
			b.Fatalf("verdict %+v", v)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
}
