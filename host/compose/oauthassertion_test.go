package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

const canaryAssertion = "CANARY.ASSERTION.c41f"

// script writes an executable shell script and returns its path and
// SHA-256.
func script(t *testing.T, dir, name, body string) (string, string) {
	t.Helper()
	path := filepath.Join(dir, name)
	data := []byte("#!/bin/sh\n" + body + "\n")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return path, hex.EncodeToString(sum[:])
}

func TestAssertionSource(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	ok, okSum := script(t, dir, "assert", `echo "$1.$2.c41f"; touch `+marker)
	fails, _ := script(t, dir, "fails", `echo `+canaryAssertion+`; echo `+canaryAssertion+` >&2; exit 3`)
	chatty, _ := script(t, dir, "chatty", `head -c 70000 /dev/zero | tr '\0' x`)
	slow, _ := script(t, dir, "slow", `exec sleep 30`)
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte(canaryAssertion+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tests := []struct {
		name    string
		o       config.OAuth
		want    string // the assertion, or the error's text
		fails   bool
		ran     bool
		timeout time.Duration
	}{
		{"file", config.OAuth{AssertionFile: file}, canaryAssertion, false, false, 0},
		{"missing file", config.OAuth{AssertionFile: file + ".gone"}, "oauth.assertionFile", true, false, 0},
		{"command with args", config.OAuth{AssertionCommand: ok, AssertionArgs: []string{"CANARY", "ASSERTION"}}, canaryAssertion, false, true, 0},
		{"bare name in PATH", config.OAuth{AssertionCommand: "assert", AssertionArgs: []string{"CANARY", "ASSERTION"}}, canaryAssertion, false, true, 0},
		{"pinned", config.OAuth{AssertionCommand: ok, AssertionArgs: []string{"CANARY", "ASSERTION"}, AssertionSHA256: okSum}, canaryAssertion, false, true, 0},
		{"pin mismatch", config.OAuth{AssertionCommand: ok, AssertionSHA256: strings.Repeat("0", 64)}, "not the assertionSha256 configured", true, false, 0},
		{"exit status", config.OAuth{AssertionCommand: fails}, "exit status 3", true, false, 0},
		{"too much output", config.OAuth{AssertionCommand: chatty}, "printed more than", true, false, 0},
		{"not found", config.OAuth{AssertionCommand: "no-such-assertion-command"}, "oauth.assertionCommand", true, false, 0},
		{"cancelled", config.OAuth{AssertionCommand: slow}, "oauth.assertionCommand", true, false, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(marker)
			src, err := assertionSource(&tt.o, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			got, err := src(ctx)
			if time.Since(start) > 10*time.Second {
				t.Errorf("the source took %s", time.Since(start))
			}
			switch {
			case tt.fails && err == nil:
				t.Fatalf("source = %q, want an error", got)
			case tt.fails && (!strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "CANARY")):
				t.Fatalf("err = %v: want %q in it and no assertion", err, tt.want)
			case !tt.fails && (err != nil || got != tt.want):
				t.Fatalf("source = %q, %v; want %q", got, err, tt.want)
			}
			if _, err := os.Stat(marker); (err == nil) != tt.ran {
				t.Errorf("the command ran: %t, want %t", err == nil, tt.ran)
			}
		})
	}
	if _, err := assertionSource(&config.OAuth{AssertionCommand: ok, AssertionSHA256: "xyz"}, nil); err == nil {
		t.Error("a malformed pin was accepted")
	}
}

// TestAssertionCommandUnderManagedAllowlist: the host runs the
// assertionCommand only when the managed allowlist admits it, as it
// starts a stdio server's command: a refused command does not run and the
// token request fails naming the key; an admitted one runs.
func TestAssertionCommandUnderManagedAllowlist(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	allowed := filepath.Join(dir, "allowed")
	if err := os.Mkdir(allowed, 0o755); err != nil {
		t.Fatal(err)
	}
	good, _ := script(t, allowed, "assert", `echo `+canaryAssertion+`; touch `+marker)
	bad, _ := script(t, dir, "assert", `echo `+canaryAssertion+`; touch `+marker)
	for _, tc := range []struct {
		name    string
		command string
		ran     bool
	}{{"admitted", good, true}, {"refused", bad, false}} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(marker)
			cfg := &config.Config{
				Managed: &config.Managed{File: "managed.yaml", AllowedServers: []config.ServerPattern{
					{Command: allowed + "/*"}, {URL: "https://mcp.example.test/*"}}},
				MCPServers: map[string]*config.Server{"api": {URL: "https://mcp.example.test/mcp",
					OAuth: &config.OAuth{Grant: "jwt-bearer", ClientID: "c", AssertionCommand: tc.command}}},
			}
			src, err := assertionSource(cfg.MCPServers["api"].OAuth, func(path string) (string, error) {
				return cfg.AdmitAssertionCommand("api", path)
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := src(context.Background())
			if tc.ran {
				if err != nil || got != canaryAssertion {
					t.Fatalf("source = %q, %v; want the assertion", got, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), "mcpServers.api.oauth.assertionCommand: not allowed by the managed policy managed.yaml") {
				t.Fatalf("source = %q, %v; want a refusal naming the key", got, err)
			}
			if _, err := os.Stat(marker); (err == nil) != tc.ran {
				t.Errorf("the command ran: %t, want %t", err == nil, tc.ran)
			}
		})
	}
}
