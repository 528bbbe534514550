package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The per-call pairs. "bare" is an mcp-go client CallTool of lookup_order
// that sends the same secureArguments (fixed bytes spliced in by
// secureSplicer, the least a client can do); "host" is a Session.CallTool of
// the same tool with the same arguments, through the whole pipeline:
// injection guard, approval (allow), bindings (a cached source, a literal
// and a session value), secureArguments (and the Mcp-Param-Region header
// over HTTP) added by the wire seam, the audit record written to a file,
// and result redaction. The server does the same work for both.
// "host_plain" and "bare_plain" call lookup_order_plain, which has no
// secure parameters: the host pipeline without bindings or the wire seam's
// rewrite.

func benchCalls(b *testing.B, f *callFixture) {
	ctx := context.Background()
	b.Run("interleaved", func(b *testing.B) { benchInterleaved(b, f) })
	b.Run("interleaved4", func(b *testing.B) { benchInterleaved4(b, f) })
	b.Run("interleaved_floor", func(b *testing.B) { benchInterleavedFloor(b, f) })
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"bare", func() error { return f.bareCall(ctx, "lookup_order") }},
		{"host", func() error { return f.hostCall(ctx, "lookup_order") }},
		{"host_plain", func() error { return f.hostCall(ctx, "lookup_order_plain") }},
		{"bare_plain", func() error { return f.bareCall(ctx, "lookup_order_plain") }},
	} {
		b.Run(c.name, func(b *testing.B) {
			f.forget()
			b.ReportAllocs()
			began := cpuTime()
			for i := 0; b.Loop(); i++ {
				if i%256 == 255 {
					f.forget()
				}
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
			// The process's CPU time (a stdio server's is not counted): far
			// less moved by other tenants of the machine than wall time.
			b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchInterleaved is the ratio figure's benchmark: every op is one host
// call and one bare call, in alternating order, each timed on its own. A
// shared machine drifts in speed over seconds (other tenants, frequency);
// two benchmarks run one after the other see different machines, while
// calls interleaved one by one see the same one. It reports both sides'
// mean time per call and their ratio.
func benchInterleaved(b *testing.B, f *callFixture) {
	ctx := context.Background()
	f.forget()
	var hostTime, bareTime, hostCPU, bareCPU time.Duration
	for i := 0; b.Loop(); i++ {
		if i%256 == 255 {
			f.forget()
		}
		for j := range 2 {
			cpu, start := cpuTime(), time.Now()
			var err error
			if (i+j)%2 == 0 {
				err = f.hostCall(ctx, "lookup_order")
				hostTime += time.Since(start)
				hostCPU += cpuTime() - cpu
			} else {
				err = f.bareCall(ctx, "lookup_order")
				bareTime += time.Since(start)
				bareCPU += cpuTime() - cpu
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if b.N > 0 && bareTime > 0 {
		b.ReportMetric(float64(hostTime.Nanoseconds())/float64(b.N), "host-ns/call")
		b.ReportMetric(float64(bareTime.Nanoseconds())/float64(b.N), "bare-ns/call")
		b.ReportMetric(float64(hostTime)/float64(bareTime), "host/bare")
		if bareCPU > 0 {
			// The process's CPU time while each call ran (a stdio
			// server's is not counted): on a loaded machine far steadier
			// than the wall time, which is mostly waiting for a core.
			b.ReportMetric(float64(hostCPU)/float64(bareCPU), "cpu-host/bare")
		}
	}
}

// benchInterleavedFloor measures what host/bare cannot go below: every op
// is one bare call, and one bare call followed by the two write(2)s the
// host's audit makes for it (the host's own two lines for that call,
// appended to an O_APPEND file beside its audit log), in alternating
// order, each timed on its own, as interleaved times host and bare. It
// reports floor/bare: the ratio a host that did nothing but write its two
// records would reach (run beside interleaved, in the same process).
func benchInterleavedFloor(b *testing.B, f *callFixture) {
	ctx := context.Background()
	if err := f.hostCall(ctx, "lookup_order"); err != nil {
		b.Fatal(err)
	}
	lines, err := lastAuditLines(f.audit, 2)
	if err != nil {
		b.Fatal(err)
	}
	out, err := os.OpenFile(filepath.Join(b.TempDir(), "floor.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	fd := int(out.Fd())
	var bareTime, floorTime, bareCPU, floorCPU time.Duration
	f.forget()
	for i := 0; b.Loop(); i++ {
		if i%256 == 255 {
			f.forget()
		}
		for j := range 2 {
			cpu, start := cpuTime(), time.Now()
			err := f.bareCall(ctx, "lookup_order")
			if (i+j)%2 == 0 {
				bareTime += time.Since(start)
				bareCPU += cpuTime() - cpu
			} else {
				for _, line := range lines {
					if err == nil {
						_, err = syscall.Write(fd, line)
					}
				}
				floorTime += time.Since(start)
				floorCPU += cpuTime() - cpu
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if b.N > 0 && bareTime > 0 {
		b.ReportMetric(float64(floorTime)/float64(bareTime), "floor/bare")
		b.ReportMetric(float64(floorTime-bareTime)/float64(b.N), "writes-ns/call")
		if bareCPU > 0 {
			b.ReportMetric(float64(floorCPU)/float64(bareCPU), "cpu-floor/bare")
		}
	}
}

// lastAuditLines are the last n lines of the audit file at path, each with
// its newline.
func lastAuditLines(path string, n int) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) < n {
		return nil, fmt.Errorf("the audit file has %d lines, want at least %d", len(lines), n)
	}
	lines = lines[len(lines)-n:]
	lines[n-1] = append(lines[n-1], '\n')
	return lines, nil
}

// benchInterleaved4 splits the secure-parameter cost the same way: every op
// is one call of each of host, host_plain, bare and bare_plain, the order
// rotated every op, each timed on its own. host−host_plain against
// bare−bare_plain is what the secure path costs the host beyond what
// sending secureArguments costs any client, measured on the same machine
// at the same moment (docs/PERFORMANCE.md, Session 4).
func benchInterleaved4(b *testing.B, f *callFixture) {
	ctx := context.Background()
	names := [4]string{"host", "host_plain", "bare", "bare_plain"}
	calls := [4]func() error{
		func() error { return f.hostCall(ctx, "lookup_order") },
		func() error { return f.hostCall(ctx, "lookup_order_plain") },
		func() error { return f.bareCall(ctx, "lookup_order") },
		func() error { return f.bareCall(ctx, "lookup_order_plain") },
	}
	var spent [4]time.Duration
	f.forget()
	for i := 0; b.Loop(); i++ {
		if i%256 == 255 {
			f.forget()
		}
		for j := range 4 {
			k := (i + j) % 4
			start := time.Now()
			err := calls[k]()
			spent[k] += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if b.N > 0 && spent[2] > 0 && spent[3] > 0 {
		for k, name := range names {
			b.ReportMetric(float64(spent[k].Nanoseconds())/float64(b.N), name+"-ns/call")
		}
		b.ReportMetric(float64(spent[0]-spent[1])/float64(b.N), "host-secure-ns")
		b.ReportMetric(float64(spent[2]-spent[3])/float64(b.N), "bare-secure-ns")
	}
}

// BenchmarkCallInProcess: the mcptest server in this process, through its
// in-process transport. Allocations of both sides (client and server) are
// counted.
func BenchmarkCallInProcess(b *testing.B) {
	f := inProcessFixture(b)
	b.Logf("protocol %s", f.hostProtocol)
	benchCalls(b, f)
}

// BenchmarkCallHTTP: the mcptest server on loopback streamable HTTP in this
// process (reported, no target).
func BenchmarkCallHTTP(b *testing.B) {
	f := httpFixture(b)
	b.Logf("protocol %s", f.hostProtocol)
	benchCalls(b, f)
}

// BenchmarkCallStdio: the agenthost-testserver binary as a child process; only
// this process's allocations are counted.
func BenchmarkCallStdio(b *testing.B) {
	f := stdioFixture(b)
	b.Logf("protocol %s", f.hostProtocol)
	benchCalls(b, f)
}

// TestCallPathsDoTheSameServerWork checks the premise of the per-call
// ratio, in-process and over HTTP: both paths reach the same tool with the
// same arguments and the same secure values (and, over HTTP, the same
// region header), the host's secure values are the bound ones, the audit
// log names them without their values, and the cached source is not called
// again.
func TestCallPathsDoTheSameServerWork(t *testing.T) {
	for _, c := range []struct {
		name    string
		fixture func(testing.TB) *callFixture
		headers bool
	}{
		{"in-process", inProcessFixture, false},
		{"http", httpFixture, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.fixture(t)
			ctx := context.Background()
			f.forget()
			vaultCalls := f.vault.calls.Load()
			if err := f.hostCall(ctx, "lookup_order"); err != nil {
				t.Fatal(err)
			}
			if err := f.bareCall(ctx, "lookup_order"); err != nil {
				t.Fatal(err)
			}
			calls := f.server.Recording().Messages("tools/call")
			if len(calls) != 2 {
				t.Fatalf("server saw %d tools/call, want 2", len(calls))
			}
			hostParams, bareParams := calls[0].Params(), calls[1].Params()
			for _, key := range []string{"name", "arguments", "secureArguments"} {
				if !jsonEqual(t, hostParams[key], bareParams[key]) {
					t.Errorf("%s differs between host and bare", key)
				}
			}
			var secure map[string]string
			if err := json.Unmarshal(hostParams["secureArguments"], &secure); err != nil {
				t.Fatalf("host secureArguments: %v", err)
			}
			want := map[string]string{"tenant_id": benchTenantID, "region": "eu-west1", "instance": benchInstance}
			if len(secure) != len(want) {
				t.Errorf("host secureArguments %v, want the keys of %v", keys(secure), keys(want))
			}
			for k, v := range want {
				if secure[k] != v {
					t.Errorf("secureArguments[%s] is not the bound value", k)
				}
			}
			if c.headers && f.hostProtocol == "2026-07-28" {
				for i, who := range []string{"host", "bare"} {
					if calls[i].Headers["Mcp-Param-Region"] != "eu-west1" {
						t.Errorf("%s call without the Mcp-Param-Region header: %v", who, calls[i].Headers)
					}
				}
			}
			audit, err := os.ReadFile(f.audit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(audit, []byte(`"secureParams":["instance","region","tenant_id"]`)) {
				t.Errorf("audit records do not name the secure parameters:\n%s", audit)
			}
			if bytes.Contains(audit, []byte(benchTenantID)) {
				t.Error("the audit log holds a secure value")
			}
			if n := f.vault.calls.Load() - vaultCalls; n != 0 {
				t.Errorf("vault called %d times for a session whose value was already resolved; want 0 (cached)", n)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
