package servers

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestServersFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		json bool
		code int
	}{
		{nil, false, 0},
		{[]string{"--json"}, true, 0},
		{[]string{"srv"}, false, 2},
		{[]string{"--jsn"}, false, 2},
	} {
		f, _ := cmdtest.Factory(t, "", "")
		var got *ServersOptions
		err := cmdtest.Parse(NewCmdServers(f, func(o *ServersOptions) error { got = o; return nil }), tc.args...)
		if cmdtest.Code(err) != tc.code {
			t.Errorf("%v: %v, want exit %d", tc.args, err, tc.code)
			continue
		}
		if tc.code == 0 && (got.JSON != tc.json || got.Ctx == nil) {
			t.Errorf("%v: options %+v", tc.args, got)
		}
	}
}

// serversConfig has a server that connects and one that cannot start.
func serversConfig(t *testing.T) string {
	url := cmdtest.StartServer(t)
	return "mcpServers:\n  shop:\n    url: " + url + "\n  broken:\n    command: ./no-such-server-here\n"
}

// TestServersJSON pins the document's bytes: field names and order, null
// for an absent error or protocol, and exit 6 when a server is down.
func TestServersJSON(t *testing.T) {
	f, s := cmdtest.Factory(t, serversConfig(t), "")
	err := cmdtest.Parse(NewCmdServers(f, nil), "--json")
	if cmdtest.Code(err) != 6 {
		t.Fatalf("exit %d (%v), want 6 for the broken server\nstderr: %s", cmdtest.Code(err), err, s.ErrOut.String())
	}
	out := s.Out.String()
	for _, want := range []string{
		"{\n  \"servers\": [\n    {\n      \"name\": \"broken\",\n      \"status\": \"error\",\n      \"error\": \"",
		"\",\n      \"protocolVersion\": null,\n      \"secureParams\": false,\n      \"tools\": 0,\n      \"sandbox\": ",
		"    {\n      \"name\": \"shop\",\n      \"status\": \"connected\",\n      \"error\": null,\n      \"protocolVersion\": \"",
		"\",\n      \"secureParams\": false,\n      \"tools\": 2,\n",
		"      \"sandbox\": null\n    }\n  ]\n}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("servers --json lacks %q:\n%s", want, out)
		}
	}
}

func TestServersTable(t *testing.T) {
	f, s := cmdtest.Factory(t, serversConfig(t), "")
	err := cmdtest.Parse(NewCmdServers(f, nil))
	if cmdtest.Code(err) != 6 {
		t.Fatalf("exit %d, want 6", cmdtest.Code(err))
	}
	lines := strings.Split(s.Out.String(), "\n")
	if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "SECURE-PARAMS  TOOLS  ERROR") {
		t.Errorf("header %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "broken  error") || !strings.HasPrefix(lines[2], "shop    connected") {
		t.Errorf("rows:\n%s", s.Out.String())
	}
	// The server's own error is printed in the table, not logged again.
	if strings.Contains(s.ErrOut.String(), "level=WARN") {
		t.Errorf("a warning was logged beside the table: %s", s.ErrOut.String())
	}
}

func TestServersNoneConfigured(t *testing.T) {
	f, s := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdServers(f, nil)); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "no servers configured\n" {
		t.Errorf("stdout %q", s.Out.String())
	}
	f, s = cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdServers(f, nil), "--json"); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "{\n  \"servers\": []\n}\n" {
		t.Errorf("stdout %q, want an empty array", s.Out.String())
	}
}
