package get

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

// TestGet: one server's settings, env and header values masked.
func TestGet(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n    headers:\n      X-Key: canary-header-value\n  fs:\n    command: ./nothing\n    env:\n      TOKEN: canary-env-value\n"
	// One Factory per command line, as in the binary.
	f, s := cmdtest.Factory(t, cfg, "")
	var got *GetOptions
	if err := cmdtest.Parse(NewCmdGet(f, func(o *GetOptions) error { got = o; return nil }), "shop"); err != nil || got.Name != "shop" {
		t.Fatalf("%v, options %+v", err, got)
	}
	f, s = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdGet(f, nil), "shop"); err != nil {
		t.Fatal(err)
	}
	want := "shop:\n  File: " + f.ConfigPath + "\n  Status: ✓ Connected (2 tools)\n  Type: http\n  URL: " + url +
		"\n  Headers:\n    X-Key=(set)\n\nTo remove this server, run: agenthost mcp remove shop\n"
	if s.Out.String() != want {
		t.Errorf("get shop\n%s\nwant\n%s", s.Out.String(), want)
	}
	f, s = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdGet(f, nil), "fs"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  Status: ✗ Failed to connect: ", "  Type: stdio\n  Command: ", "/nothing\n  Args: \n  Environment:\n    TOKEN=(set)\n"} {
		if !strings.Contains(s.Out.String(), want) {
			t.Errorf("get fs lacks %q:\n%s", want, s.Out.String())
		}
	}
	if strings.Contains(s.Out.String(), "canary") {
		t.Errorf("a value was printed:\n%s", s.Out.String())
	}
	f, _ = cmdtest.Factory(t, cfg, "")
	err := cmdtest.Parse(NewCmdGet(f, nil), "nope")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), `no server named "nope" in the config`) {
		t.Errorf("get nope: %v", err)
	}
}
