package pins

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/approve"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/diff"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

// TestPinsRecordThenDiff: `pins` pins every tool once; a second run pins
// none, and diff finds every tool matching its pin.
func TestPinsRecordThenDiff(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n"
	f, s := cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdPins(f)); err != nil {
		t.Fatalf("%v\n%s", err, s.ErrOut.String())
	}
	out := s.Out.String()
	for _, want := range []string{"pinned shop/echo\n", "pinned shop/fail\n", "(2 newly pinned)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("pins lacks %q:\n%s", want, out)
		}
	}
	path := f.ConfigPath
	f, s = cmdtest.Factory(t, cfg, "")
	f.ConfigPath = path
	if err := cmdtest.Parse(NewCmdPins(f), "record", "--server", "shop"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Out.String(), "(0 newly pinned)") {
		t.Errorf("second record:\n%s", s.Out.String())
	}
	f, s = cmdtest.Factory(t, cfg, "")
	f.ConfigPath = path
	if err := cmdtest.Parse(NewCmdPins(f), "diff", "shop"); err != nil {
		t.Fatalf("diff: %v", err)
	}
	if !strings.HasPrefix(s.Out.String(), "every listed tool matches its pin (lock file: ") {
		t.Errorf("diff:\n%s", s.Out.String())
	}
	f, s = cmdtest.Factory(t, cfg, "")
	f.ConfigPath = path
	if err := cmdtest.Parse(NewCmdPins(f), "approve", "shop", "--all"); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if s.Out.String() != "nothing to approve: the named tools match their pins\n" {
		t.Errorf("approve:\n%s", s.Out.String())
	}
}

func TestPinsUnavailableAndUnknown(t *testing.T) {
	cfg := "mcpServers:\n  gone:\n    url: http://127.0.0.1:1/mcp\n"
	f, s := cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdPins(f)); cmdtest.Code(err) != 6 {
		t.Errorf("pins with a server down: %v, want exit 6", err)
	}
	if !strings.Contains(s.ErrOut.String(), "agenthost: gone: error ") || !strings.Contains(s.ErrOut.String(), "(its tools were not pinned or compared)") {
		t.Errorf("stderr: %s", s.ErrOut.String())
	}
	f, _ = cmdtest.Factory(t, cfg, "")
	if err := cmdtest.Parse(NewCmdPins(f), "approve", "gone", "t"); cmdtest.Code(err) != 6 {
		t.Errorf("approve on a server down: %v, want exit 6", err)
	}
	f, _ = cmdtest.Factory(t, cfg, "")
	err := cmdtest.Parse(NewCmdPins(f), "diff", "nope")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), `no server named "nope" in the config`) {
		t.Errorf("diff nope: %v", err)
	}
}

func TestPinsFlags(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	var d *diff.DiffOptions
	if err := cmdtest.Parse(diff.NewCmdDiff(f, func(o *diff.DiffOptions) error { d = o; return nil }), "shop", "echo"); err != nil || d.Server != "shop" || d.Tool != "echo" {
		t.Errorf("diff shop echo: %v, %+v", err, d)
	}
	if err := cmdtest.Parse(diff.NewCmdDiff(f, nil), "a", "b", "c"); cmdtest.Code(err) != 2 {
		t.Errorf("diff with three arguments: %v", err)
	}
	var a *approve.ApproveOptions
	capture := func(o *approve.ApproveOptions) error { a = o; return nil }
	if err := cmdtest.Parse(approve.NewCmdApprove(f, capture), "shop", "echo", "fail"); err != nil || a.Server != "shop" || len(a.Tools) != 2 || a.All {
		t.Errorf("approve shop echo fail: %v, %+v", err, a)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"shop"}, "name the tools to approve, or --all"},
		{[]string{"shop", "echo", "--all"}, "name tools or give --all, not both"},
		{nil, "requires at least 1 arg(s)"},
	} {
		err := cmdtest.Parse(approve.NewCmdApprove(f, capture), tc.args...)
		if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("approve %v: %v, want %q", tc.args, err, tc.msg)
		}
	}
}
