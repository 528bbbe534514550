package remove

import (
	"os"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestRemove(t *testing.T) {
	f, s := cmdtest.Factory(t, "mcpServers:\n  fs:\n    command: run\n  other:\n    command: run\n", "")
	var got *RemoveOptions
	if err := cmdtest.Parse(NewCmdRemove(f, func(o *RemoveOptions) error { got = o; return nil }), "fs", "-s", "project"); err != nil {
		t.Fatal(err)
	}
	if got.Name != "fs" || got.Scope != "project" || got.ConfigPath != f.ConfigPath {
		t.Errorf("options %+v", got)
	}
	if err := cmdtest.Parse(NewCmdRemove(f, nil), "fs"); err != nil {
		t.Fatal(err)
	}
	if want := "Removed MCP server fs from " + f.ConfigPath + "\n"; s.Out.String() != want {
		t.Errorf("stdout %q, want %q", s.Out.String(), want)
	}
	data, _ := os.ReadFile(f.ConfigPath)
	if strings.Contains(string(data), "fs:") || !strings.Contains(string(data), "other:") {
		t.Errorf("config after remove:\n%s", data)
	}
	err := cmdtest.Parse(NewCmdRemove(f, nil), "fs")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), `no server named "fs"`) {
		t.Errorf("second remove: %v", err)
	}
	if err := cmdtest.Parse(NewCmdRemove(f, nil)); cmdtest.Code(err) != 2 {
		t.Errorf("remove with no name: %v", err)
	}
}
