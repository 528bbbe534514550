package list

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestList(t *testing.T) {
	url := cmdtest.StartServer(t)
	f, s := cmdtest.Factory(t, "mcpServers:\n  shop:\n    url: "+url+"\n  broken:\n    command: ./no-such-server-here\n    args: [a, b]\n", "")
	if err := cmdtest.Parse(NewCmdList(f, nil)); err != nil {
		t.Fatal(err)
	}
	out := s.Out.String()
	if !strings.HasPrefix(out, "Checking MCP server health...\n\nbroken: ") || !strings.Contains(out, "no-such-server-here a b - ✗ Failed to connect: ") {
		t.Errorf("list:\n%s", out)
	}
	if !strings.HasSuffix(out, "shop: "+url+" (http) - ✓ Connected (2 tools)\n") {
		t.Errorf("list:\n%s", out)
	}
	if err := cmdtest.Parse(NewCmdList(f, nil), "x"); cmdtest.Code(err) != 2 {
		t.Errorf("list with an argument: %v", err)
	}
}

func TestListNone(t *testing.T) {
	f, s := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdList(f, nil)); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "No MCP servers configured. Use `agenthost mcp add` to add a server.\n" {
		t.Errorf("stdout %q", s.Out.String())
	}
}
