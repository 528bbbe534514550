package bench

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkVersionInit is what a process that uses nothing pays before
// main: `agenthost version`, run with GODEBUG=inittrace=1, reports how many
// package inits ran and what they allocated and took (the runtime's own
// figures). Peak RSS is not reported: a child started from this process
// inherits its peak (os/exec forks with CLONE_VM, and exec keeps the
// shared memory's high-water mark), so measure it from outside with a
// small parent (docs/PERFORMANCE.md says how).
func BenchmarkVersionInit(b *testing.B) {
	bin := binary(b, "agenthost")
	var inits, bytesAt, allocs, clock float64
	for b.Loop() {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("agenthost version: %v\n%s", err, stderr.Bytes())
		}
		n, by, al, ms := parseInitTrace(stderr.Bytes())
		if n == 0 {
			b.Fatalf("no init trace in agenthost version's stderr:\n%s", stderr.Bytes())
		}
		inits, bytesAt, allocs, clock = inits+n, bytesAt+by, allocs+al, clock+ms
	}
	n := float64(b.N)
	b.ReportMetric(inits/n, "inits")
	b.ReportMetric(bytesAt/n, "init-B")
	b.ReportMetric(allocs/n, "init-allocs")
	b.ReportMetric(clock/n, "init-ms")
}

// parseInitTrace sums the lines "init PKG @T ms, D ms clock, B bytes, A
// allocs" the runtime prints under GODEBUG=inittrace=1.
func parseInitTrace(trace []byte) (inits, bytesAt, allocs, clock float64) {
	sc := bufio.NewScanner(bytes.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" {
			continue
		}
		ms, err1 := strconv.ParseFloat(f[4], 64)
		by, err2 := strconv.ParseFloat(f[7], 64)
		al, err3 := strconv.ParseFloat(f[9], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		inits, clock, bytesAt, allocs = inits+1, clock+ms, bytesAt+by, allocs+al
	}
	return inits, bytesAt, allocs, clock
}
