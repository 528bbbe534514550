package root

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpCitesTheRepositoryDocs: help texts point at the repository's
// docs/ and never at a document outside it; the root help names the four
// references.
func TestHelpCitesTheRepositoryDocs(t *testing.T) {
	root := NewCmdRoot(cmdutil.New(cmdutil.System()))
	for _, ref := range []string{"docs/cli.md", "docs/config.md", "docs/events.md", "docs/audit.md"} {
		if !strings.Contains(root.Long, ref) {
			t.Errorf("the root help does not name %s", ref)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts := []string{c.Use, c.Short, c.Long}
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, text := range texts {
			if strings.Contains(strings.ToUpper(text), "CONTRACT") {
				t.Errorf("%s: help text %q cites CONTRACT", c.CommandPath(), text)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, tc := range []struct{ cmd, flag, doc string }{
		{"run", "output-format", "docs/events.md"},
		{"tools", "json", "docs/cli.md"},
		{"call", "json", "docs/cli.md"},
		{"servers", "json", "docs/cli.md"},
	} {
		c, _, err := root.Find([]string{tc.cmd})
		if err != nil {
			t.Fatal(err)
		}
		if f := c.Flags().Lookup(tc.flag); f == nil || !strings.Contains(f.Usage, tc.doc) {
			t.Errorf("%s --%s does not cite %s", tc.cmd, tc.flag, tc.doc)
		}
	}
}

// TestTransportHelpHasNoDefault: an unset --transport falls back from
// streamable HTTP to legacy SSE, so its help must not show a default of
// "http" beside the words that describe the fallback.
func TestTransportHelpHasNoDefault(t *testing.T) {
	root := NewCmdRoot(cmdutil.New(cmdutil.System()))
	for _, name := range []string{"tools", "call"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("transport")
		if f == nil {
			t.Fatalf("%s has no --transport", name)
		}
		if f.DefValue != "" {
			t.Errorf("%s --transport shows the default %q, which is not what an unset flag does", name, f.DefValue)
		}
		if !strings.Contains(f.Usage, "falling back to legacy SSE") {
			t.Errorf("%s --transport help: %q", name, f.Usage)
		}
	}
}
