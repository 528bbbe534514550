package initcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestInitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want InitOptions
		code int
	}{
		{nil, InitOptions{}, 0},
		{[]string{"--server", "s", "--entries", "--indent", "4"}, InitOptions{Server: "s", Entries: true, Indent: 4}, 0},
		{[]string{"--write"}, InitOptions{Write: true}, 0},
		{[]string{"--write", "--entries"}, InitOptions{}, 2},
		{[]string{"--indent", "x"}, InitOptions{}, 2},
	} {
		f, _ := cmdtest.Factory(t, "", "")
		var got *InitOptions
		err := cmdtest.Parse(NewCmdInit(f, func(o *InitOptions) error { got = o; return nil }), tc.args...)
		if cmdtest.Code(err) != tc.code {
			t.Errorf("%v: %v, want exit %d", tc.args, err, tc.code)
			continue
		}
		if tc.code == 0 && (got.Server != tc.want.Server || got.Entries != tc.want.Entries || got.Indent != tc.want.Indent || got.Write != tc.want.Write) {
			t.Errorf("%v: options %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

func TestInitPrintsAndWrites(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n"
	f, s := cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdInit(f, nil)); err != nil {
		t.Fatalf("%v\n%s", err, s.ErrOut.String())
	}
	block := s.Out.String()
	if !strings.Contains(block, "approvals:") || !strings.Contains(block, "echo") {
		t.Errorf("the printed block:\n%s", block)
	}

	f, s = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdInit(f, nil), "--entries", "--indent", "2"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Out.String(), "approvals:") || !strings.HasPrefix(s.Out.String(), "  ") {
		t.Errorf("--entries --indent 2:\n%s", s.Out.String())
	}

	f, s = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdInit(f, nil), "--write"); err != nil {
		t.Fatalf("--write: %v\n%s", err, s.ErrOut.String())
	}
	if !strings.Contains(s.Out.String(), f.ConfigPath+": ") || !strings.Contains(s.Out.String(), "catalogue entries added") {
		t.Errorf("--write said %q", s.Out.String())
	}
	data, _ := os.ReadFile(f.ConfigPath)
	if !strings.Contains(string(data), "approvals:") || !strings.HasPrefix(string(data), "mcpServers:") {
		t.Errorf("the written config:\n%s", data)
	}
	// A second --write has nothing to add and leaves the file as it is.
	path := f.ConfigPath
	f, s = cmdtest.Factory(t, "", "")
	f.ConfigPath = path
	if err := cmdtest.Parse(NewCmdInit(f, nil), "--write"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Out.String(), ": nothing to add (") {
		t.Errorf("second --write said %q", s.Out.String())
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Errorf("the second --write changed the file")
	}
}

func TestInitWriteNeedsYAMLOrJSON(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	toml := filepath.Join(t.TempDir(), "agenthost.toml")
	if err := os.WriteFile(toml, []byte(""), 0o600); err != nil {
		t.Fatal(err)
	}
	f.ConfigPath = toml
	err := cmdtest.Parse(NewCmdInit(f, nil), "--write")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), "--write edits YAML and JSON configuration files only") {
		t.Errorf("--write on TOML: %v", err)
	}
	if err := writable(""); cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), "--write: no configuration file") {
		t.Errorf("no file: %v", err)
	}
	for _, ok := range []string{"a.yaml", "a.YML", "a.json"} {
		if err := writable(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
