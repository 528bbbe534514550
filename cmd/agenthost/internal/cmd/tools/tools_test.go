package tools

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestToolsFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want ToolsOptions
		code int
		msg  string
	}{
		{"none", nil, ToolsOptions{}, 0, ""},
		{"server and json", []string{"--server", "shop", "--json"}, ToolsOptions{Server: "shop", JSON: true}, 0, ""},
		{"url with transport", []string{"--url", "http://127.0.0.1:1/mcp", "--transport", "sse"},
			ToolsOptions{AdHocFlags: cmdutil.AdHocFlags{URL: "http://127.0.0.1:1/mcp", Transport: "sse", TransportSet: true}}, 0, ""},
		{"url alone falls back", []string{"--url", "http://127.0.0.1:1/mcp"}, ToolsOptions{AdHocFlags: cmdutil.AdHocFlags{URL: "http://127.0.0.1:1/mcp"}}, 0, ""},
		{"session flags", []string{"--bind", "a=b", "--trust", "3", "--approve", "auto", "--session-id", "s1", "--subject", "ann"},
			ToolsOptions{}, 0, ""},
		{"server and url", []string{"--server", "shop", "--url", "http://127.0.0.1:1/"}, ToolsOptions{}, 2, "--server and --url exclude each other"},
		{"an argument", []string{"shop"}, ToolsOptions{}, 2, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := cmdtest.Factory(t, "", "")
			var got *ToolsOptions
			err := cmdtest.Parse(NewCmdTools(f, func(o *ToolsOptions) error { got = o; return nil }), tc.args...)
			if cmdtest.Code(err) != tc.code || (tc.msg != "" && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("%v (exit %d), want exit %d saying %q", err, cmdtest.Code(err), tc.code, tc.msg)
			}
			if tc.code != 0 {
				return
			}
			if got.Server != tc.want.Server || got.JSON != tc.want.JSON || got.AdHocFlags != tc.want.AdHocFlags || got.Ctx == nil {
				t.Errorf("options %+v, want %+v", got, tc.want)
			}
			if tc.name == "session flags" && (got.Session.Binds[0] != "a=b" || got.Session.Trust != 3 || got.Session.Approve != "auto" ||
				got.Session.ID != "s1" || got.Session.Subject != "ann") {
				t.Errorf("session flags %+v", got.Session)
			}
		})
	}
}

// TestToolsJSONDocument: `tools --json` prints host.CatalogReport as it
// encodes, two-space indented, for an ad-hoc server as for a configured one.
func TestToolsJSONDocument(t *testing.T) {
	url := cmdtest.StartServer(t)
	f, s := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdTools(f, nil), "--url", url, "--json"); err != nil {
		t.Fatalf("%v\nstderr: %s", err, s.ErrOut.String())
	}
	var doc struct {
		Servers []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Tools  []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(s.Out.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s.Out.String())
	}
	if len(doc.Servers) != 1 || doc.Servers[0].Name != "url" || doc.Servers[0].Status != "connected" || len(doc.Servers[0].Tools) != 2 {
		t.Fatalf("document %+v", doc)
	}
	if !strings.HasPrefix(s.Out.String(), "{\n  \"servers\": [\n    {\n      \"name\": \"url\",\n") {
		t.Errorf("not the indented document: %s", s.Out.String())
	}
}

func TestToolsText(t *testing.T) {
	url := cmdtest.StartServer(t)
	f, s := cmdtest.Factory(t, "mcpServers:\n  shop:\n    url: "+url+"\n", "")
	if err := cmdtest.Parse(NewCmdTools(f, nil), "--server", "shop"); err != nil {
		t.Fatalf("%v\nstderr: %s", err, s.ErrOut.String())
	}
	out := s.Out.String()
	for _, want := range []string{"shop (connected, ", "  active    shop__echo", "  active    shop__fail", "\n\n2 tools: 2 active, 0 hidden, 0 excluded.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools text lacks %q:\n%s", want, out)
		}
	}
}

func TestToolsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  string
		args []string
		code int
		msg  string
	}{
		{"unknown server", "", []string{"--server", "nope"}, 2, `--server: no server named "nope" in the config`},
		{"not a URL", "", []string{"--url", "ftp://x"}, 2, `--url: "ftp://x" is not an http(s) URL`},
		{"bad transport", "", []string{"--url", "http://127.0.0.1:1/", "--transport", "ws"}, 2, `--transport: "ws" is not http or sse`},
		{"bad trust", "", []string{"--trust", "9"}, 2, "--trust: 9 is not in 1..5"},
		{"bad approve", "", []string{"--approve", "maybe"}, 2, `--approve: "maybe" is not one of prompt, deny, auto, wait`},
		{"down server", "mcpServers:\n  gone:\n    url: http://127.0.0.1:1/mcp\n", nil, 6, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := cmdtest.Factory(t, tc.cfg, "")
			err := cmdtest.Parse(NewCmdTools(f, nil), tc.args...)
			if cmdtest.Code(err) != tc.code || (tc.msg != "" && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("%v (exit %d), want exit %d saying %q\nstdout: %s", err, cmdtest.Code(err), tc.code, tc.msg, s.Out.String())
			}
		})
	}
}
