//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins/plugintest"
	"github.com/agenthost/agenthost/plugins/sdk"
)

const canary = "CANARY-credexec-5c2d"

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cmd.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// credScript answers "known" with a value built from the scope, blocks on
// "block", and fails anything else (echoing to stderr, which must never
// surface).
const credScript = `case "$1" in
known) printf '{"Version": 1, "Value": "v-%s", "Expiration": "2030-01-01T00:00:00Z"}' "$AGENTHOST_SUBJECT" ;;
block) exec sleep 30 ;;
*) echo "no such ref $1 ` + canary + `" >&2; exit 3 ;;
esac
`

func TestConformance(t *testing.T) {
	plugintest.Run(t, newExecSource(), plugintest.Options{
		Config:      map[string]any{"command": []any{script(t, credScript)}},
		Known:       bindings.Request{Scope: bindings.Scope{Subject: "acme"}, Ref: "known"},
		Want:        "v-acme",
		BlockingRef: "block",
		Concurrency: 20,
	})
}

func TestEnvironmentAndArguments(t *testing.T) {
	t.Setenv("HOST_ONLY_SECRET", "leak")
	cmd := script(t, `printf '{"Version":1,"Value":"%s|%s|%s|%s|%s|%s|%s|%s|%s"}' "$AGENTHOST_SESSION_ID" "$AGENTHOST_SUBJECT" "$AGENTHOST_SERVER" "$AGENTHOST_TOOL" "$AGENTHOST_PARAM" "$1" "$2" "${HOST_ONLY_SECRET:-unset}" "$(env | cut -d= -f1 | grep -v -e '^PWD$' -e '^SHLVL$' -e '^_$' | sort | tr '\n' ',')"`)
	src := plugintest.NewSource(t, newExecSource(), map[string]any{"command": []any{cmd, "--flag"}})
	res, err := src.Resolve(context.Background(), bindings.Request{
		Scope: bindings.Scope{SessionID: "s1", Subject: "acme", Server: "orders", Tool: "create", Param: "token"},
		Ref:   "orders/token",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "s1|acme|orders|create|token|--flag|orders/token|unset|" +
		"AGENTHOST_PARAM,AGENTHOST_SERVER,AGENTHOST_SESSION_ID,AGENTHOST_SUBJECT,AGENTHOST_TOOL,PATH,"
	if res.Value != want {
		t.Errorf("command saw\n%s\nwant\n%s", res.Value, want)
	}
}

func TestOutputAndFailures(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantValue  string
		wantExpiry time.Time
		wantErr    string
	}{
		{name: "value only", body: `echo '{"Version": 1, "Value": "abc"}'`, wantValue: "abc"},
		{name: "with expiration", body: `echo '{"Version": 1, "Value": "abc", "Expiration": "2031-05-06T07:08:09Z"}'`,
			wantValue: "abc", wantExpiry: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)},
		{name: "extra fields are ignored", body: `echo '{"Version": 1, "Value": "abc", "AccessKeyId": "x"}'`, wantValue: "abc"},
		{name: "non-zero exit", body: `echo '` + canary + `' >&2; exit 7`, wantErr: "command failed (exit status 7); stderr withheld (21 bytes)"},
		{name: "killed by a signal", body: `kill -9 $$`, wantErr: "signal: killed"},
		{name: "not JSON", body: `echo 'token=` + canary + `'`, wantErr: "not a JSON object"},
		{name: "nothing printed", body: `true`, wantErr: "printed nothing"},
		{name: "wrong version", body: `echo '{"Version": 2, "Value": "` + canary + `"}'`, wantErr: "Version 2; want 1"},
		{name: "missing value", body: `echo '{"Version": 1}'`, wantErr: "no Value"},
		{name: "value of wrong type", body: `echo '{"Version": 1, "Value": 12345}'`, wantErr: "Value has the wrong type"},
		{name: "bad expiration", body: `echo '{"Version": 1, "Value": "` + canary + `", "Expiration": "tomorrow"}'`, wantErr: "Expiration is not an RFC 3339 time"},
		{name: "trailing data", body: `echo '{"Version": 1, "Value": "a"} {"Version": 1, "Value": "` + canary + `"}'`, wantErr: "data after the JSON object"},
		{name: "too much output", body: `head -c 1100000 /dev/zero`, wantErr: "more than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := plugintest.NewSource(t, newExecSource(), map[string]any{"command": []any{script(t, tt.body)}})
			res, err := src.Resolve(context.Background(), bindings.Request{Ref: "r"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), canary) {
					t.Errorf("error leaks command output: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Value != tt.wantValue || !res.Expiry.Equal(tt.wantExpiry) || res.Sensitivity != bindings.Secret {
				t.Errorf("Resolve = %+v, want value %q expiry %v (secret)", res, tt.wantValue, tt.wantExpiry)
			}
		})
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "bg")
	// The command leaves a background child in its group, then hangs.
	cmd := script(t, fmt.Sprintf("sleep 60 &\necho $! > %s\nwait\n", pidfile))
	src := plugintest.NewSource(t, newExecSource(), map[string]any{"command": []any{cmd}, "timeout": "300ms"})
	began := time.Now()
	_, err := src.Resolve(context.Background(), bindings.Request{Ref: "r"})
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("Resolve = %v, want a timeout", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("timed-out Resolve took %s", took)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("background child %d survived the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestConfigure(t *testing.T) {
	exe := script(t, "true")
	tests := []struct {
		name    string
		config  map[string]any
		wantErr string
	}{
		{"absolute command", map[string]any{"command": []any{exe}}, ""},
		{"found in PATH", map[string]any{"command": []any{"sh", "-c", "true"}}, ""},
		{"timeout", map[string]any{"command": []any{exe}, "timeout": "2s"}, ""},
		{"not found", map[string]any{"command": []any{"agenthost-no-such-program"}}, "not found in PATH"},
		{"not executable", map[string]any{"command": []any{filepath.Dir(exe)}}, "not an executable file"},
		{"empty program", map[string]any{"command": []any{""}}, "must name a program"},
		{"bad timeout", map[string]any{"command": []any{exe}, "timeout": "soon"}, "positive Go duration"},
		{"negative timeout", map[string]any{"command": []any{exe}, "timeout": "-1s"}, "positive Go duration"},
		{"huge timeout", map[string]any{"command": []any{exe}, "timeout": "1h"}, "at most 5m0s"},
	}
	for _, tt := range tests {
		err := newExecSource().Configure(context.Background(), tt.config)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Configure: %v", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Configure = %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestCancellationKillsCommand(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := script(t, fmt.Sprintf("echo $$ > %s\nexec sleep 30\n", pidfile))
	src := newExecSource()
	if err := src.Configure(context.Background(), map[string]any{"command": []any{cmd}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := src.Resolve(ctx, sdkRequest("r")); done <- err }()
	var pid int
	deadline := time.Now().Add(5 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Resolve = %v, want context.Canceled", err)
	}
	if pid == 0 || alive(pid) {
		t.Errorf("command (pid %d) still running after cancellation", pid)
	}
}

func sdkRequest(ref string) sdk.Request { return sdk.Request{Ref: ref} }
