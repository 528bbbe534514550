package cmdutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
)

func testFactory(t *testing.T, configYAML string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("HOME", dir)
	var out, errOut bytes.Buffer
	f := New(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if configYAML != "" {
		f.ConfigPath = filepath.Join(dir, "agenthost.yaml")
		if err := os.WriteFile(f.ConfigPath, []byte(configYAML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(f.Close)
	return f, &out, &errOut
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("cobra's own"), ExitUsage},
		{UsageErr(errors.New("x")), ExitUsage},
		{Exit(ExitToolError), ExitToolError},
		{fmt.Errorf("wrapped: %w", CodeErr(ExitVoteRefused, errors.New("x"))), ExitVoteRefused},
	} {
		if got := CodeOf(tc.err); got != tc.code {
			t.Errorf("CodeOf(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
	for kind, code := range map[host.Kind]int{
		host.KindDenied: ExitDenied, host.KindBinding: ExitBinding, host.KindToolError: ExitToolError,
		host.KindUnavailable: ExitUnavailable, host.KindConfig: ExitUsage, host.KindAuthorization: ExitAuthorization,
		host.Kind("something else"): ExitError,
	} {
		if got := CodeFor(kind); got != code {
			t.Errorf("CodeFor(%s) = %d, want %d", kind, got, code)
		}
	}
	if e := Exit(7); e.Error() != "exit 7" || errors.Unwrap(e) != nil {
		t.Errorf("Exit(7): %q", e)
	}
	inner := errors.New("inner")
	if e := CodeErr(1, inner); e.Error() != "inner" || !errors.Is(e, inner) {
		t.Errorf("CodeErr keeps its error: %v", e)
	}
}

func TestRun(t *testing.T) {
	type opts struct{ n int }
	o := &opts{n: 1}
	var got *opts
	if err := Run(o, func(x *opts) error { got = x; return nil }, func(*opts) error { return errors.New("ran") }); err != nil || got != o {
		t.Errorf("with runF: %v, %v", err, got)
	}
	if err := Run(o, nil, func(*opts) error { return errors.New("ran") }); err == nil || err.Error() != "ran" {
		t.Errorf("without runF: %v", err)
	}
}

func TestLogger(t *testing.T) {
	f, _, errOut := testFactory(t, "")
	f.LogLevel = "loud"
	if _, err := f.Logger(); CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), `--log-level: "loud" is not one of debug, info, warn, error`) {
		t.Errorf("bad level: %v", err)
	}
	for _, tc := range []struct {
		level         string
		set, reports  bool
		warnShown     bool
		errorShownToo bool
	}{
		{"warn", false, false, true, true},
		{"warn", false, true, false, true}, // a command that reports servers itself
		{"warn", true, true, true, true},   // unless --log-level was given
		{"error", false, false, false, true},
	} {
		errOut.Reset()
		f.LogLevel, f.LogLevelSet, f.ReportsServers = tc.level, tc.set, tc.reports
		l, err := f.Logger()
		if err != nil {
			t.Fatal(err)
		}
		l.Warn("the warning")
		l.Error("the error")
		if strings.Contains(errOut.String(), "the warning") != tc.warnShown || strings.Contains(errOut.String(), "the error") != tc.errorShownToo {
			t.Errorf("%+v: logged %q", tc, errOut.String())
		}
	}
}

func TestConfig(t *testing.T) {
	f, _, errOut := testFactory(t, "")
	t.Chdir(t.TempDir())
	cfg, err := f.Config()
	if err != nil || cfg.File != "" {
		t.Fatalf("no file: %v, %+v", err, cfg)
	}
	if !strings.Contains(errOut.String(), "agenthost: no config file found (searched ") || !strings.Contains(errOut.String(), "running with no servers") {
		t.Errorf("stderr %q", errOut.String())
	}
	again, _ := f.Config()
	if again != cfg || strings.Count(errOut.String(), "no config file found") != 1 {
		t.Errorf("the config is read once and said once: %q", errOut.String())
	}

	f, _, _ = testFactory(t, "mcpServers:\n  srv:\n    comand: ./server\n")
	if _, err := f.Config(); CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "mcpServers.srv.comand") {
		t.Errorf("a bad key: %v", err)
	}

	f, _, _ = testFactory(t, "mcpServers:\n  srv:\n    command: ./server\n")
	if _, err := f.ConfigWith("srv", "--server: "); err != nil {
		t.Errorf("a configured server: %v", err)
	}
	if _, err := f.ConfigWith("nope", "--server: "); CodeOf(err) != ExitUsage || err.Error() != `--server: no server named "nope" in the config` {
		t.Errorf("an unknown server: %v", err)
	}
}

func TestSessionFlagsAreChecked(t *testing.T) {
	f, _, _ := testFactory(t, "mcpServers: {}\n")
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s   SessionFlags
		msg string
	}{
		{SessionFlags{Binds: []string{"novalue"}}, "--bind: "},
		{SessionFlags{Trust: 6}, "--trust: 6 is not in 1..5"},
		{SessionFlags{Trust: -1}, "--trust: -1 is not in 1..5"},
		{SessionFlags{Approve: "yes"}, `--approve: "yes" is not one of prompt, deny, auto, wait`},
		{SessionFlags{Approve: "wait"}, "--approve wait: approvals.store is not set in the config"},
	} {
		if _, err := f.Session(h, &tc.s); CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.msg)
		}
	}
	sess, err := f.Session(h, &SessionFlags{Binds: []string{"user=ann"}, Trust: 3, ID: "s-1", Subject: "ann"})
	if err != nil || sess.ID() != "s-1" || sess.Subject() != "ann" {
		t.Errorf("a session: %v", err)
	}
}

func TestApprover(t *testing.T) {
	f, _, errOut := testFactory(t, "")
	t.Setenv("USER", "ann")
	for _, tc := range []struct {
		approve string
		want    string
	}{
		{"", "approvals.Deny"}, // stdin is no terminal
		{"deny", "approvals.Deny"},
		{"auto", "approvals.Auto"},
	} {
		if got := fmt.Sprintf("%T", f.approver(&SessionFlags{Approve: tc.approve})); got != tc.want {
			t.Errorf("--approve %q: %s, want %s", tc.approve, got, tc.want)
		}
	}
	f.approver(&SessionFlags{Approve: "prompt", Subject: "ann"})
	if !strings.Contains(errOut.String(), `the prompt answers as "ann", who is also the session's --subject`) {
		t.Errorf("no warning that the approver is the subject: %q", errOut.String())
	}
	errOut.Reset()
	f.approver(&SessionFlags{Approve: "prompt", Subject: "bob"})
	if errOut.Len() != 0 {
		t.Errorf("a warning for another subject: %q", errOut.String())
	}
	if f.elicitation("deny") != nil || f.elicitation("auto") == nil {
		t.Error("only --approve auto answers servers' questions")
	}
	var _ approvals.Approver = f.approver(&SessionFlags{})
}

// TestAdHocConfig: compose.AdHocConfig decides the ad-hoc configuration
// (its tests there); the CLI names the bad parameter as its flag.
func TestAdHocConfig(t *testing.T) {
	for _, tc := range []struct {
		url, transport string
		msg            string
	}{
		{"http://127.0.0.1:9/mcp", "", ""},
		{"ftp://example.test", "", `--url: "ftp://example.test" is not an http(s) URL`},
		{"http://127.0.0.1:9/", "ws", `--transport: "ws" is not http or sse`},
	} {
		cfg, err := AdHocConfig(tc.url, tc.transport)
		if tc.msg == "" {
			if err != nil || cfg.MCPServers[AdHocServer] == nil {
				t.Errorf("%s: %v", tc.url, err)
			}
		} else if err == nil || err.Error() != tc.msg {
			t.Errorf("%s %s: %v, want %q", tc.url, tc.transport, err, tc.msg)
		}
	}
}

// TestConnectChecksInOrder: the configuration is read first, then the
// command's own checks, then the host is built.
func TestConnectChecksInOrder(t *testing.T) {
	f, _, _ := testFactory(t, "mcpServers: {}\n")
	checked := false
	check := func() error { checked = true; return UsageErr(errors.New("--args: not a JSON object")) }
	_, _, err := f.Connect(context.Background(), Target{Server: "nope", Check: check}, &SessionFlags{})
	if checked || err == nil || !strings.Contains(err.Error(), `no server named "nope"`) {
		t.Errorf("an unknown server is reported before the checks: %v (checked %t)", err, checked)
	}
	_, _, err = f.Connect(context.Background(), Target{Check: check}, &SessionFlags{})
	if !checked || err == nil || err.Error() != "--args: not a JSON object" {
		t.Errorf("the check's error: %v", err)
	}
	_, _, err = f.Connect(context.Background(), Target{URL: "nope"}, &SessionFlags{})
	if CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "--url") {
		t.Errorf("a bad --url: %v", err)
	}
	h, sess, err := f.Connect(context.Background(), Target{}, &SessionFlags{Subject: "ann"})
	if err != nil || h == nil || sess.Subject() != "ann" {
		t.Errorf("the preamble: %v", err)
	}
}

func TestArgsObject(t *testing.T) {
	for in, ok := range map[string]bool{"": true, "{}": true, `{"a":[1]}`: true, "[]": false, "null": false, "1": false, "{": false} {
		got, err := ArgsObject(in)
		if (err == nil) != ok || (ok && in != "" && string(got) != in) || (in == "" && got != nil) {
			t.Errorf("ArgsObject(%q) = %s, %v", in, got, err)
		}
		if err != nil && err.Error() != "--args: not a JSON object" {
			t.Errorf("ArgsObject(%q) error %q", in, err)
		}
	}
}

type screen struct{ bytes.Buffer }

func (*screen) IsTerminal() bool { return true }

func TestShownAndTruncate(t *testing.T) {
	hostile := "a\x1b[2Jb\n\tc"
	if got := Shown(&bytes.Buffer{}, hostile); got != hostile {
		t.Errorf("off a terminal: %q", got)
	}
	if got := Shown(&screen{}, hostile); strings.Contains(got, "\x1b") || !strings.Contains(got, "\n\tc") {
		t.Errorf("on a terminal: %q", got)
	}
	if IsTerminal(&bytes.Buffer{}) || !IsTerminal(&screen{}) {
		t.Error("IsTerminal")
	}
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"short", 10, "short"}, {"two\nlines", 20, "two lines"}, {"ääääää", 3, "äää…"}} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestLoginHelpers(t *testing.T) {
	if SubjectNote("") != "" || SubjectNote("ann") != ` for subject "ann"` {
		t.Error("SubjectNote")
	}
	if loginTarget(AdHocServer, "https://x.test/mcp") != "--url https://x.test/mcp" || loginTarget("shop", "https://x.test/mcp") != "shop" {
		t.Error("loginTarget")
	}
}

func TestInterruptTurn(t *testing.T) {
	f := New(&IOStreams{})
	if f.InterruptTurn() {
		t.Error("no turn runs, yet one was interrupted")
	}
	n := 0
	f.SetInterrupt(func() { n++ })
	if !f.InterruptTurn() || n != 1 || f.InterruptTurn() {
		t.Errorf("the turn is interrupted once: %d", n)
	}
}
