//go:build linux

package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

func TestResolveRoundTrip(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	expiry := time.Unix(1900000000, 0)
	tests := []struct {
		ref  string
		want bindings.Resolved
	}{
		{"echo/hello", bindings.Resolved{Value: "hello", Sensitivity: bindings.Secret}},
		{"public/world", bindings.Resolved{Value: "world", Sensitivity: bindings.Public}},
		{"expiry/1900000000", bindings.Resolved{Value: "v", Expiry: expiry, Sensitivity: bindings.Secret}},
	}
	for _, tt := range tests {
		got := resolve(t, h.src, tt.ref)
		if !got.Expiry.Equal(tt.want.Expiry) {
			t.Errorf("Resolve(%q).Expiry = %v, want %v", tt.ref, got.Expiry, tt.want.Expiry)
		}
		got.Expiry, tt.want.Expiry = time.Time{}, time.Time{}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Resolve(%q) mismatch (-want +got):\n%s", tt.ref, diff)
		}
	}
}

func TestResolvePassesScope(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	req := bindings.Request{
		Scope:  bindings.Scope{SessionID: "s-1", Subject: "acme", Server: "orders", Tool: "create", Param: "token"},
		Ref:    "scope",
		Schema: json.RawMessage(`{"type":"string"}`),
	}
	res, err := h.src.Resolve(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(res.Value), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"SessionID": "s-1", "Subject": "acme", "Server": "orders", "Tool": "create", "Param": "token",
		"ParamSchema": map[string]any{"type": "string"}, "Ref": "scope",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scope seen by the plugin (-want +got):\n%s", diff)
	}
}

func TestDescribe(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	info, err := h.src.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "testplugin" || info.Version != "0.0.1" || !json.Valid(info.ConfigSchema) {
		t.Errorf("Describe = %+v", info)
	}
}

func TestPluginGetsOnlyExplicitEnv(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_HOST_ONLY", "must-not-leak")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) { o.Env = []string{"EXPLICIT=yes"} })
	if got := resolve(t, h.src, "env/EXPLICIT").Value; got != "yes" {
		t.Errorf("env/EXPLICIT = %q, want yes", got)
	}
	for _, name := range []string{"AGENTHOST_TEST_HOST_ONLY", "PATH", "HOME"} {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "env/" + name})
		if !errors.Is(err, plugins.ErrUnknownRef) {
			t.Errorf("plugin sees host $%s (err = %v); it must get only Options.Env", name, err)
		}
	}
}

// TestUnknownRef: an unknown ref is ErrUnknownRef, said once: the plugin's
// message (which wraps the SDK's sentinel, and names the ref) adds only
// what the host does not say itself.
func TestUnknownRef(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	for _, c := range []struct{ ref, want string }{
		{"nope", `plugin testplugin: resolve "nope": unknown ref`},
		{"env/AGENTHOST_NOT_SET", `plugin testplugin: resolve "env/AGENTHOST_NOT_SET": unknown ref: $AGENTHOST_NOT_SET is not set`},
	} {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: c.ref})
		if !errors.Is(err, plugins.ErrUnknownRef) {
			t.Fatalf("err = %v, want ErrUnknownRef", err)
		}
		if err.Error() != c.want {
			t.Errorf("ref %q: error %q, want %q", c.ref, err, c.want)
		}
	}
}

func TestCrashMidCallRestartsOnNextCall(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	var restarts atomic.Int32
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
		o.Args = []string{"-pidfile", pidfile}
		o.OnRestart = func() { restarts.Add(1) }
	})
	resolve(t, h.src, "echo/warm")
	first := readPid(t, pidfile)
	if err := os.Remove(pidfile); err != nil {
		t.Fatal(err)
	}

	_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "crash"})
	if !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("Resolve(crash) = %v, want ErrPluginExited", err)
	}
	if got := resolve(t, h.src, "echo/again").Value; got != "again" {
		t.Errorf("after restart got %q", got)
	}
	second := readPid(t, pidfile)
	if second == first {
		t.Errorf("plugin pid unchanged (%d) after a crash; want a new process", first)
	}
	waitGone(t, "crashed plugin", first)

	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "plugin after Close", second)
	if left := dirEntries(t, h.socketDir); len(left) > 0 {
		t.Errorf("socket dir not empty after Close: %v", left)
	}
	// Close waited for the start goroutines, which call OnRestart.
	if n := restarts.Load(); n != 1 {
		t.Errorf("OnRestart called %d times, want once (the first start is not a restart)", n)
	}
}

func TestIdleCrashIsNoticed(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) { o.Args = []string{"-pidfile", pidfile} })
	resolve(t, h.src, "die-later")
	waitGone(t, "plugin that exits on its own", readPid(t, pidfile))
	// With no call in between, only the exit watcher can notice.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(h.logs.String(), "plugin exited unexpectedly") {
		if time.Now().After(deadline) {
			t.Fatalf("host never noticed the plugin exit:\n%s", h.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// So the next call starts a new process instead of failing on the
	// dead connection.
	if got := resolve(t, h.src, "echo/x").Value; got != "x" {
		t.Errorf("got %q", got)
	}
}

func TestCallTimeout(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
		o.CallTimeout = 200 * time.Millisecond
		o.Args = []string{"-pidfile", pidfile}
	})
	resolve(t, h.src, "echo/warm")
	began := time.Now()
	_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "slow"})
	if !errors.Is(err, plugins.ErrCallTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Resolve(slow) = %v, want ErrCallTimeout wrapping context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("timed-out call took %s", took)
	}
	pid := readPid(t, pidfile)
	resolve(t, h.src, "echo/still-up")
	if again := readPid(t, pidfile); again != pid {
		t.Errorf("a slow call restarted the plugin (pid %d -> %d)", pid, again)
	}
}

func TestCallerCancellation(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	resolve(t, h.src, "echo/warm")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.src.Resolve(ctx, bindings.Request{Ref: "slow"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, plugins.ErrCallTimeout) {
		t.Fatalf("Resolve(slow) with a caller deadline = %v; want the caller's context.DeadlineExceeded", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := h.src.Resolve(ctx, bindings.Request{Ref: "echo/x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve with a cancelled context = %v; want context.Canceled", err)
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		edit       func(*plugins.Options)
		want       []error
		wantDetail string
		wantTail   string
	}{
		{name: "wrong magic cookie", mode: "bad-cookie",
			want: []error{plugins.ErrHandshake, plugins.ErrMagicCookie}, wantDetail: "magic cookie"},
		{name: "protocol version mismatch", mode: "bad-version",
			want: []error{plugins.ErrHandshake, plugins.ErrProtocolVersion}, wantDetail: "protocol version 1"},
		{name: "stdout before Serve", mode: "stdout-noise",
			want: []error{plugins.ErrHandshake}, wantDetail: `printed "hello from a chatty plugin" to stdout before the go-plugin handshake`},
		{name: "exits before handshake", mode: "exit-early",
			want: []error{plugins.ErrStart}, wantDetail: "exited", wantTail: "cannot reach the vault"},
		{name: "never handshakes", mode: "hang",
			edit: func(o *plugins.Options) { o.StartTimeout = 300 * time.Millisecond },
			want: []error{plugins.ErrStartTimeout}, wantDetail: "no handshake within 300ms"},
		{name: "configuration rejected", mode: "normal",
			edit: func(o *plugins.Options) { o.Config = map[string]any{"reject": true} },
			want: []error{plugins.ErrConfigure}, wantDetail: "configured to reject"},
		{name: "configuration has an unknown key", mode: "normal",
			edit: func(o *plugins.Options) { o.Config = map[string]any{"bogus": 1} },
			want: []error{plugins.ErrConfigure}, wantDetail: "unknown key(s) bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
				o.Args = []string{"-mode", tt.mode}
				if tt.edit != nil {
					tt.edit(o)
				}
			})
			_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("err = %v\nwant errors.Is %v", err, want)
				}
			}
			var se *plugins.StartError
			if !errors.As(err, &se) {
				t.Fatalf("err = %T %v, want *plugins.StartError", err, err)
			}
			if !strings.Contains(se.Detail, tt.wantDetail) {
				t.Errorf("Detail = %q, want it to contain %q", se.Detail, tt.wantDetail)
			}
			if tt.wantTail != "" && !strings.Contains(err.Error(), tt.wantTail) {
				t.Errorf("error does not include the plugin's stderr tail %q:\n%v", tt.wantTail, err)
			}
			// The SDK logs go-plugin's start-up at debug level: no
			// explanation of anything, so never quoted in the error.
			for _, line := range se.StderrTail {
				if strings.Contains(line, `"@level":"debug"`) || strings.Contains(line, `"@level":"trace"`) {
					t.Errorf("the error quotes the plugin's debug line %s", line)
				}
			}
		})
	}
}

func TestChecksumMismatchNeverExecutes(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	plugin := filepath.Join(dir, "plugin")
	copyFile(t, bin.testPlugin, plugin)

	t.Run("at NewSource", func(t *testing.T) {
		wrong := checksum(t, bin.credFile)
		_, err := plugins.NewSource(plugins.Options{Path: plugin, Checksum: wrong, Args: []string{"-marker", marker}})
		if !errors.Is(err, plugins.ErrChecksum) {
			t.Fatalf("NewSource = %v, want ErrChecksum", err)
		}
	})

	t.Run("binary replaced after NewSource", func(t *testing.T) {
		h := newHarness(t, plugin, func(o *plugins.Options) { o.Args = []string{"-marker", marker} })
		copyFile(t, bin.credFile, plugin) // a different (valid!) executable
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
		if !errors.Is(err, plugins.ErrChecksum) {
			t.Fatalf("Resolve = %v, want ErrChecksum", err)
		}
		if !strings.Contains(err.Error(), "not executed") {
			t.Errorf("error does not say the file was not executed: %v", err)
		}
	})

	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plugin ran despite its checksum mismatch (marker: %v)", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

func TestBackoffAndCircuitBreaker(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "starts")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
		o.Args = []string{"-mode", "exit-early", "-marker", marker}
		o.RestartBackoff = 20 * time.Millisecond
		o.MaxRestartBackoff = 40 * time.Millisecond
		o.BreakerThreshold = 3
		o.BreakerCooldown = time.Hour
	})
	for i := 1; i <= 3; i++ {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
		if !errors.Is(err, plugins.ErrStart) {
			t.Fatalf("attempt %d: %v, want ErrStart", i, err)
		}
	}
	if n := countLines(t, marker); n != 3 {
		t.Fatalf("plugin started %d times, want 3", n)
	}
	began := time.Now()
	_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
	if !errors.Is(err, plugins.ErrCircuitOpen) || !errors.Is(err, plugins.ErrStart) {
		t.Fatalf("after 3 failures: %v, want ErrCircuitOpen wrapping the last ErrStart", err)
	}
	if took := time.Since(began); took > 100*time.Millisecond {
		t.Errorf("open breaker took %s to answer; it must fail fast", took)
	}
	if n := countLines(t, marker); n != 3 {
		t.Errorf("open breaker still started the plugin (%d starts)", n)
	}
}

func TestBackoffRespectsCallerDeadline(t *testing.T) {
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
		o.Args = []string{"-mode", "exit-early"}
		o.RestartBackoff = time.Hour
	})
	if _, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"}); !errors.Is(err, plugins.ErrStart) {
		t.Fatalf("first call: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := h.src.Resolve(ctx, bindings.Request{Ref: "echo/x"})
	if !errors.Is(err, plugins.ErrRestartBackoff) {
		t.Fatalf("call during back-off = %v, want ErrRestartBackoff", err)
	}
}

func TestConcurrentResolveOneProcess(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "starts")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) { o.Args = []string{"-marker", marker} })
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := "v" + strings.Repeat("x", i%7)
			res, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/" + want})
			if err == nil && res.Value != want {
				err = errors.New("got " + res.Value + ", want " + want)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if starts := countLines(t, marker); starts != 1 {
		t.Errorf("%d concurrent first calls started %d processes, want 1", n, starts)
	}
}

func TestCloseKillsPluginAndItsChildren(t *testing.T) {
	dir := t.TempDir()
	pidfile, childfile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) { o.Args = []string{"-pidfile", pidfile} })
	resolve(t, h.src, "spawn/"+childfile)
	pid, child := readPid(t, pidfile), readPid(t, childfile)
	if !alive(child) {
		t.Fatal("child not running before Close")
	}
	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "plugin", pid)
	waitGone(t, "plugin's child", child)
	if left := dirEntries(t, h.socketDir); len(left) > 0 {
		t.Errorf("socket dir not empty after Close: %v", left)
	}
	if _, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"}); !errors.Is(err, plugins.ErrClosed) {
		t.Errorf("Resolve after Close = %v, want ErrClosed", err)
	}
}

func TestCanaryNeverInLogsOrErrors(t *testing.T) {
	const canary = "CANARY-7f3a9c-do-not-leak"
	h := newHarness(t, bin.testPlugin, nil)

	// The plugin logs the value (JSON and plain stderr) while resolving it.
	if got := resolve(t, h.src, "canary/"+canary).Value; got != canary {
		t.Fatalf("canary resolved to %q", got)
	}
	// Later failures that quote the value, in an error and in a panic.
	var errs []error
	for _, ref := range []string{"error-canary", "panic-canary"} {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: ref})
		if err == nil {
			t.Fatalf("Resolve(%q) succeeded", ref)
		}
		errs = append(errs, err)
	}
	resolve(t, h.src, "echo/after") // the plugin survived its panic
	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}

	for _, err := range errs {
		if strings.Contains(err.Error(), canary) {
			t.Errorf("error leaks the canary: %v", err)
		}
	}
	logs := h.logs.String()
	if strings.Contains(logs, canary) {
		t.Errorf("host log leaks the canary:\n%s", logs)
	}
	// The lines did reach the log, masked; otherwise the check above
	// proves nothing.
	for _, want := range []string{"resolving", "about to return [REDACTED]", "panicked in Resolve"} {
		if !strings.Contains(logs, want) {
			t.Errorf("host log lacks %q:\n%s", want, logs)
		}
	}
	// Each stderr line is logged once, by the Source: go-plugin's own
	// forwarding of plugin stderr stays muted.
	if n := strings.Count(logs, " resolving: "); n != 1 {
		t.Errorf("the plugin's log line was logged %d times, want once:\n%s", n, logs)
	}
}

func TestNewSourceValidation(t *testing.T) {
	good := checksum(t, bin.testPlugin)
	tests := []struct {
		name string
		opts plugins.Options
		want string
	}{
		{"no path", plugins.Options{Checksum: good}, "Path is required"},
		{"no checksum", plugins.Options{Path: bin.testPlugin}, "Checksum must be the 32-byte SHA-256"},
		{"short checksum", plugins.Options{Path: bin.testPlugin, Checksum: good[:16]}, "got 16 bytes"},
		{"env entry without =", plugins.Options{Path: bin.testPlugin, Checksum: good, Env: []string{"JUSTAKEY"}}, `"JUSTAKEY" is not KEY=VALUE`},
		{"missing file", plugins.Options{Path: filepath.Join(t.TempDir(), "nope"), Checksum: good}, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plugins.NewSource(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewSource = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestParseChecksum(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	tests := []struct {
		in      string
		wantErr bool
	}{
		{hex, false},
		{"sha256:" + hex, false},
		{"  sha256:" + hex + "\n", false},
		{hex[:62], true},
		{"md5:" + hex, true},
		{strings.Repeat("zz", 32), true},
	}
	for _, tt := range tests {
		sum, err := plugins.ParseChecksum(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseChecksum(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if err == nil && len(sum) != 32 {
			t.Errorf("ParseChecksum(%q) = %d bytes", tt.in, len(sum))
		}
	}
}

func TestCloseDuringStart(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	h := newHarness(t, bin.testPlugin, func(o *plugins.Options) {
		o.Args = []string{"-mode", "hang", "-pidfile", pidfile}
		o.StartTimeout = time.Minute
	})
	done := make(chan error, 1)
	go func() {
		_, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
		done <- err
	}()
	pid := readPid(t, pidfile)
	began := time.Now()
	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Close waited %s for a hanging start", took)
	}
	if err := <-done; !errors.Is(err, plugins.ErrClosed) {
		t.Errorf("Resolve = %v, want ErrClosed", err)
	}
	waitGone(t, "plugin stuck in its start", pid)
	if strings.Contains(h.logs.String(), "restart scheduled") {
		t.Errorf("a start killed by Close was counted as a failure:\n%s", h.logs)
	}
}
