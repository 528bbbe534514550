package root

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/version"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
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

// TestEveryCommandIsThere: the command tree the docs describe.
func TestEveryCommandIsThere(t *testing.T) {
	root := NewCmdRoot(cmdutil.New(cmdutil.System()))
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
