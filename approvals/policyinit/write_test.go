package policyinit_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
)

func loads(data []byte, format, path string) error {
	_, err := config.Parse(data, format, path)
	return err
}

func TestEditFormat(t *testing.T) {
	for _, tc := range []struct {
		path, format string
		json         bool
	}{
		{"a.yaml", "yaml", false},
		{"dir.d/a.YML", "yaml", false},
		{"a.json", "json", true},
		{"a.JSON", "json", true},
		{"a.toml", "", false},
		{"agenthost", "", false},
		{"", "", false},
	} {
		got, err := policyinit.EditFormat(tc.path)
		if got != tc.format || (tc.format == "") != errors.Is(err, policyinit.ErrNotEditable) {
			t.Errorf("EditFormat(%q) = %q, %v; want %q", tc.path, got, err, tc.format)
		}
		if policyinit.IsJSONFile(tc.path) != tc.json {
			t.Errorf("IsJSONFile(%q) = %t", tc.path, !tc.json)
		}
	}
}

// TestWriteInitFile: the plan is merged into a YAML or JSON file, which
// keeps its mode and its own text and still loads; a file that already
// has everything is left as it is; every failure names its step and
// leaves the file unwritten.
func TestWriteInitFile(t *testing.T) {
	const yamlCfg = "mcpServers:\n  fs:\n    command: node\n"
	const jsonCfg = `{"mcpServers": {"fs": {"command": "node"}}}` + "\n"
	refuse := func([]byte, string, string) error { return errors.New("refused") }
	for _, tc := range []struct {
		name, file, content string
		link                bool
		check               func([]byte, string, string) error
		stage               policyinit.WriteStage
		fail                bool
		format              string
	}{
		{name: "yaml", file: "agenthost.yaml", content: yamlCfg, check: loads, format: config.FormatYAML},
		{name: "json", file: "agenthost.json", content: jsonCfg, check: loads, format: config.FormatJSON},
		{name: "through a link", file: "real.yaml", content: yamlCfg, link: true, check: loads, format: config.FormatYAML},
		{name: "missing", file: "agenthost.yaml", check: loads, fail: true, stage: policyinit.StageRead},
		{name: "not YAML", file: "agenthost.yaml", content: "mcpServers: [\n", check: loads, fail: true, stage: policyinit.StageMerge},
		{name: "toml", file: "agenthost.toml", content: "[mcpServers]\n", check: loads, fail: true, stage: policyinit.StageMerge},
		{name: "would not load", file: "agenthost.yaml", content: yamlCfg, check: refuse, fail: true, stage: policyinit.StageCheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			given := path
			if tc.link {
				given = filepath.Join(dir, "agenthost.yaml")
				if err := os.Symlink(path, given); err != nil {
					t.Fatal(err)
				}
			}
			plan := initPlan(t, rules.Config{})
			res, err := policyinit.WriteInitFile(given, plan, tc.check)
			if res.Path != path {
				t.Errorf("path %q, want %q", res.Path, path)
			}
			if tc.fail {
				var we *policyinit.WriteError
				if !errors.As(err, &we) || we.Stage != tc.stage || we.Path != path {
					t.Fatalf("%v, want a failure at step %d", err, tc.stage)
				}
				if data, _ := os.ReadFile(path); string(data) != tc.content {
					t.Errorf("the file was written:\n%s", data)
				}
				return
			}
			if err != nil || !res.Changed || res.Added != len(plan.Entries) || !res.RulesAdded {
				t.Fatalf("%+v, %v", res, err)
			}
			data, _ := os.ReadFile(path)
			cfg, err := config.Parse(data, tc.format, path)
			if err != nil || len(cfg.Approvals.Catalogue) != len(plan.Entries) || len(cfg.Approvals.Rules) != len(plan.Rules) {
				t.Fatalf("the written file: %v\n%s", err, data)
			}
			if !strings.HasPrefix(string(data), strings.TrimSuffix(tc.content, "}\n")) {
				t.Errorf("the file's own text was not kept:\n%s", data)
			}
			if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640", info.Mode().Perm())
			}
			if info, err := os.Lstat(given); err != nil || (tc.link && info.Mode()&fs.ModeSymlink == 0) {
				t.Errorf("the link was replaced: %v", err)
			}
			// A second write has nothing to add and leaves the file as it is.
			again, err := policyinit.WriteInitFile(given, initPlan(t, cfg.Approvals), refuse)
			if err != nil || again.Changed || again.Added != 0 {
				t.Errorf("the second write: %+v, %v", again, err)
			}
			if after, _ := os.ReadFile(path); string(after) != string(data) {
				t.Error("the second write changed the file")
			}
		})
	}
}
