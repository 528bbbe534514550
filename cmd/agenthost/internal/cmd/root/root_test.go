package root

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/version"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/fullbuild"
)

func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errOut bytes.Buffer
	f := cmdutil.New(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	code := Execute(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// TestExecuteExitCodes: cobra's own errors are exit 2, printed once with
// the agenthost: prefix; a command's exit code passes through, its message
// printed unless the command printed it.
func TestExecuteExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"unknown command", []string{"nope"}, 2, "", "agenthost: unknown command \"nope\" for \"agenthost\"\n"},
		{"unknown flag", []string{"servers", "--nope"}, 2, "", "agenthost: unknown flag: --nope\n"},
		{"too many arguments", []string{"version", "x"}, 2, "", "agenthost: unknown command \"x\" for \"agenthost version\"\n"},
		{"bad log level", []string{"--log-level", "loud", "--config", "", "servers"}, 2, "", "--log-level: \"loud\" is not one of debug, info, warn, error\n"},
		{"a command's usage error", []string{"approvals", "approve", "x"}, 2, "", "agenthost: --as NAME is required: the approver the vote is cast as\n"},
		{"version", []string{"version"}, 0, version.Line() + "\n", ""},
		{"--version", []string{"--version"}, 0, version.Line() + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := execute(t, tc.args...)
			if code != tc.code || stdout != tc.stdout || !strings.HasSuffix(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// full is a Factory of the full build.
func full() *cmdutil.Factory {
	f := cmdutil.New(cmdutil.System())
	f.Features = fullbuild.Features()
	return f
}

// TestEveryCommandIsThere: the command tree the docs describe.
func TestEveryCommandIsThere(t *testing.T) {
	root := NewCmdRoot(full())
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			paths = append(paths, strings.TrimPrefix(sub.CommandPath(), "agenthost "))
			walk(sub)
		}
	}
	walk(root)
	want := "approvals approvals approve approvals list approvals reject approvals show audit audit verify auth auth login auth logout auth status call demo " +
		"mcp mcp add mcp get mcp list mcp remove pins pins approve pins diff pins record policy policy catalogue policy explain policy init " +
		"run serve servers sessions sessions delete sessions list sessions show tools version"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("commands\n%s\nwant\n%s", got, want)
	}
	for _, name := range []string{"config", "log-level"} {
		if root.PersistentFlags().Lookup(name) == nil {
			t.Errorf("no global --%s", name)
		}
	}
}

// TestLeanListsWhatItHandsOver: the lean build lists the commands only
// the full build has with the full build's lines, and hands each over
// with its command line untouched (flags and --help included), before
// printing anything.
func TestLeanListsWhatItHandsOver(t *testing.T) {
	lean, whole := NewCmdRoot(cmdutil.New(cmdutil.System())), NewCmdRoot(full())
	for _, c := range cmdutil.FullOnly {
		name := strings.Fields(c.Use)[0]
		l, _, errL := lean.Find([]string{name})
		w, _, errW := whole.Find([]string{name})
		if errL != nil || errW != nil || l.Name() != name || w.Name() != name {
			t.Fatalf("%s: lean %v, full %v", name, errL, errW)
		}
		if l.Use != w.Use || l.Short != w.Short || !l.DisableFlagParsing || w.DisableFlagParsing {
			t.Errorf("%s: lean lists %q %q, full %q %q", name, l.Use, l.Short, w.Use, w.Short)
		}
		for _, args := range [][]string{{name}, {name, "--help"}, {"help", name}, {name, "list", "--json", "--nope"}} {
			var out, errOut bytes.Buffer
			f := cmdutil.New(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			var got *cmdutil.NeedsFullError
			f.HandOver = func(nf *cmdutil.NeedsFullError) int { got = nf; return 42 }
			if code := Execute(context.Background(), f, args); code != 42 || got == nil || out.Len()+errOut.Len() != 0 {
				t.Errorf("lean %q: exit %d, handed over %v, printed %q %q; want it handed over, silent", args, code, got, out.String(), errOut.String())
			}
		}
	}
}

// TestLeanHandsOverWhatTheConfigUses: a config that turns on telemetry,
// names a plugin or a database is handed over by a command that reads
// it, before the command prints anything; the full build serves it.
func TestLeanHandsOverWhatTheConfigUses(t *testing.T) {
	for name, body := range map[string]string{
		"telemetry":  "observability:\n  enabled: true\n  endpoint: http://127.0.0.1:1\n",
		"plugin":     "sources:\n  vault:\n    plugin: /bin/false\n    sha256: " + strings.Repeat("ab", 32) + "\n",
		"database":   "approvals:\n  store: sqlite:/nonexistent/a.db\n",
		"expression": "approvals:\n  rules:\n    - {id: r, when: {expr: \"tool.name == 'x'\"}, decide: allow}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			path := filepath.Join(t.TempDir(), "agenthost.yaml")
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			f := cmdutil.New(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			var got *cmdutil.NeedsFullError
			f.HandOver = func(nf *cmdutil.NeedsFullError) int { got = nf; return 42 }
			if code := Execute(context.Background(), f, []string{"--config", path, "tools"}); code != 42 || got == nil || out.Len()+errOut.Len() != 0 {
				t.Errorf("exit %d, handed over %v, printed %q %q; want it handed over, silent", code, got, out.String(), errOut.String())
			}
		})
	}
}
