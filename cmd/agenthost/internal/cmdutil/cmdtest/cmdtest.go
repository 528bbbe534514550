// Package cmdtest is the test kit of the CLI's command packages: a
// Factory on buffers, reading a configuration written for the test, and a
// way to run a command's flag parsing alone.
package cmdtest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/fulllibs"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Streams are a Factory's buffers.
type Streams struct {
	Out, ErrOut *bytes.Buffer
}

// Factory is a Factory reading stdin from in, writing to buffers, with
// --config set to a file holding configYAML ("" for a file with no
// servers). It has the full build's features (but no full-only
// commands): a command is tested as it serves a command line. The token
// file and saved state live under the test's own folders; the Factory is
// closed when the test ends.
func Factory(t testing.TB, configYAML, in string) (*cmdutil.Factory, Streams) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("HOME", dir)
	t.Setenv("BROWSER", "")
	s := Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	f := cmdutil.New(&cmdutil.IOStreams{In: strings.NewReader(in), Out: s.Out, ErrOut: s.ErrOut})
	f.ConfigPath = WriteConfig(t, dir, configYAML)
	f.Features = fulllibs.Features()
	rules.UseExprEngine(f.Features.Expressions)
	t.Cleanup(f.Close)
	return f, s
}

// WriteConfig writes configYAML as dir/agenthost.yaml and returns its path.
func WriteConfig(t testing.TB, dir, configYAML string) string {
	t.Helper()
	if configYAML == "" {
		configYAML = "mcpServers: {}\n"
	}
	path := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(path, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Parse runs cmd's flag and argument parsing on args; the command's
// runF captures its options. The error is cobra's or the command's own
// validation's.
func Parse(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	return cmd.Execute()
}

// Code is err's exit code (0 for nil; 2 for an error that carries none,
// as the root command maps cobra's own).
func Code(err error) int { return cmdutil.CodeOf(err) }

// Tools are the tools of StartServer: echo answers "hello", fail answers
// with a tool error.
const Tools = `[
 {"name": "echo", "description": "Says hello.", "inputSchema": {"type": "object"},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1},
  "x-test": {"text": "hello"}},
 {"name": "fail", "description": "Fails.", "inputSchema": {"type": "object"},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1},
  "x-test": {"isError": true, "text": "it broke"}}
]`

// StartServer serves Tools over streamable
// HTTP on a loopback port for the test, and returns the endpoint URL.
func StartServer(t testing.TB) string {
	t.Helper()
	url, _ := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(Tools)})
	return url
}

// Screen is an io.Writer that says it is a terminal.
type Screen struct{ bytes.Buffer }

// IsTerminal says it is one.
func (*Screen) IsTerminal() bool { return true }

// Hostile is server or model text that would drive a terminal: clear the
// screen, set the title (OSC), ring the bell, return to the line start and
// overwrite it with a forged approval, hide text with a bidi override.
const Hostile = "ok\x1b[2J\x1b]0;title\x07\rapproval needed: [y] yes\u202e\x9b31m"

// AssertEscaped fails the test when out, printed to a terminal, holds a
// control of Hostile as it is, or lacks its escapes shown.
func AssertEscaped(t testing.TB, where, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("%s: %q reached the terminal: %q", where, c, out)
		}
	}
	if !strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u000d`) {
		t.Errorf("%s: escapes not shown: %q", where, out)
	}
}

// StandInSupervisor is a child supervisor for Factory.Supervisor that
// only says it was started: a script that writes a file and exits.
// started reports whether it was started within wait (polled).
func StandInSupervisor(t testing.TB) (sup *childproc.Supervisor, started func(wait time.Duration) bool) {
	t.Helper()
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	script := filepath.Join(dir, "supervisor")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+marker+".tmp && mv "+marker+".tmp "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &childproc.Supervisor{Path: script}, func(wait time.Duration) bool {
		for deadline := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
		}
	}
}
