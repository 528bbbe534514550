package catalogue

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestCatalogue(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n  broken:\n    command: ./no-such-server\n"
	f, _ := cmdtest.Factory(t, cfg, "")
	var got *CatalogueOptions
	if err := cmdtest.Parse(NewCmdCatalogue(f, func(o *CatalogueOptions) error { got = o; return nil }), "--server", "shop"); err != nil || got.Server != "shop" {
		t.Fatalf("%v, %+v", err, got)
	}

	f, s := cmdtest.Factory(t, cfg, "")
	err := cmdtest.Parse(NewCmdCatalogue(f, nil))
	if cmdtest.Code(err) != 6 {
		t.Fatalf("exit %d (%v), want 6 for the broken server", cmdtest.Code(err), err)
	}
	if !strings.Contains(s.ErrOut.String(), "agenthost: broken: error ") {
		t.Errorf("stderr lacks the broken server: %s", s.ErrOut.String())
	}
	for _, want := range []string{"shop", "echo", "fail"} {
		if !strings.Contains(s.Out.String(), want) {
			t.Errorf("catalogue lacks %q:\n%s", want, s.Out.String())
		}
	}

	f, s = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdCatalogue(f, nil), "--server", "shop"); err != nil {
		t.Fatalf("--server shop: %v\n%s", err, s.ErrOut.String())
	}
	f, _ = cmdtest.Factory(t, cfg, "")
	err = cmdtest.Parse(NewCmdCatalogue(f, nil), "--server", "nope")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), `--server: no server named "nope" in the config`) {
		t.Errorf("--server nope: %v", err)
	}
}
