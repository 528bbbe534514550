package call

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/host"
)

func TestCallFlags(t *testing.T) {
	for _, tc := range []struct {
		name         string
		args         []string
		server, tool string
		usage        string
	}{
		{"server and tool", []string{"shop", "echo", "--args", `{"a":1}`, "--json"}, "shop", "echo", ""},
		{"url and tool", []string{"--url", "http://127.0.0.1:1/mcp", "echo"}, cmdutil.AdHocServer, "echo", ""},
		{"url and two arguments", []string{"--url", "http://127.0.0.1:1/mcp", "shop", "echo"}, "", "", "usage: call --url URL [--transport http|sse] TOOL"},
		{"one argument", []string{"shop"}, "", "", "usage: call SERVER TOOL [--args JSON]"},
		{"three arguments", []string{"a", "b", "c"}, "", "", "usage: call SERVER TOOL [--args JSON]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := cmdtest.Factory(t, "", "")
			var got *CallOptions
			if err := cmdtest.Parse(NewCmdCall(f, func(o *CallOptions) error { got = o; return nil }), tc.args...); err != nil {
				t.Fatal(err)
			}
			if tc.usage != "" {
				if got.usage == nil || got.usage.Error() != tc.usage {
					t.Errorf("usage error %v, want %q", got.usage, tc.usage)
				}
				return
			}
			if got.usage != nil || got.Server != tc.server || got.Tool != tc.tool || got.Ctx == nil {
				t.Errorf("options %+v, want %s/%s", got, tc.server, tc.tool)
			}
		})
	}
	f, _ := cmdtest.Factory(t, "", "")
	var got *CallOptions
	if err := cmdtest.Parse(NewCmdCall(f, func(o *CallOptions) error { got = o; return nil }), "s", "t", "--transport", "http", "--args", "{}", "--json"); err != nil {
		t.Fatal(err)
	}
	if !got.TransportSet || got.Transport != "http" || got.Args != "{}" || !got.JSON {
		t.Errorf("options %+v", got)
	}
}

// mapReport is the document `call --json` printed before it was typed: a
// map, whose keys encoding/json sorts.
func mapReport(res *host.CallResult) map[string]any {
	content := res.Result.Content
	if content == nil {
		content = []mcp.Content{}
	}
	doc := map[string]any{
		"server": res.Server, "tool": res.Tool, "isError": res.IsError(), "content": content,
		"structuredContent": res.Result.StructuredContent, "decision": res.Decision,
	}
	if len(res.Labels) > 0 {
		doc["labels"] = res.Labels
	}
	return doc
}

// TestReportBytes: the typed report prints the bytes the map did, for
// every shape a result takes.
func TestReportBytes(t *testing.T) {
	text := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a <b> & c")}}
	structured := &mcp.CallToolResult{StructuredContent: map[string]any{"z": 1, "a": []int{1}}}
	failed := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent("bad")}}
	for _, tc := range []struct {
		name string
		res  *host.CallResult
	}{
		{"text, no decision", &host.CallResult{Server: "s", Tool: "t", Result: text}},
		{"no content", &host.CallResult{Server: "s", Tool: "t", Result: &mcp.CallToolResult{}}},
		{"structured", &host.CallResult{Server: "s", Tool: "t", Result: structured}},
		{"tool error", &host.CallResult{Server: "s", Tool: "t", Result: failed}},
		{"decision and labels", &host.CallResult{Server: "s", Tool: "t", Result: text,
			Decision: &host.CallDecision{Decision: "allow", Outcome: "auto", Approvers: 1, Rules: []string{"r1"}},
			Labels:   []risk.ResultLabel{{Label: "untrusted", Source: "trust-annotations"}}}},
		{"empty labels are left out", &host.CallResult{Server: "s", Tool: "t", Result: text, Labels: []risk.ResultLabel{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := cmdutil.WriteJSON(&want, mapReport(tc.res)); err != nil {
				t.Fatal(err)
			}
			if err := cmdutil.WriteJSON(&got, NewReport(tc.res)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("typed report\n%s\nmap report\n%s", got.String(), want.String())
			}
		})
	}
	var want, got bytes.Buffer
	_ = cmdutil.WriteJSON(&want, map[string]any{"error": map[string]any{"kind": "config", "message": "m <&>"}})
	_ = cmdutil.WriteJSON(&got, NewErrorReport(host.KindConfig, "m <&>"))
	if got.String() != want.String() {
		t.Errorf("typed error report\n%s\nmap report\n%s", got.String(), want.String())
	}
}

func TestCallRun(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n"
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, or a prefix when it ends with …
		errContain string
	}{
		{"text", []string{"shop", "echo", "--approve", "auto"}, 0, "hello\n", ""},
		{"denied: nobody can be asked", []string{"shop", "echo"}, 3, "", "shop/echo: not approved (no_approver)"},
		{"json", []string{"shop", "echo", "--json", "--approve", "auto"}, 0, "{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"hello\"\n    }\n  ],\n  \"decision\": {\n    \"decision\": \"ask\",\n    \"outcome\": \"approved\",\n    \"approvers\": 1,\n    \"rules\": []\n  },\n  \"isError\": false,\n  \"server\": \"shop\",\n  \"structuredContent\": null,\n  \"tool\": \"echo\"\n}\n", ""},
		{"tool error", []string{"shop", "fail", "--approve", "auto"}, 5, "it broke\n", ""},
		{"tool error in json", []string{"shop", "fail", "--json", "--approve", "auto"}, 5, "{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"it broke\"\n    }\n  ],\n  \"decision\": {\n    \"decision\": \"ask\",…", ""},
		{"unknown server", []string{"nope", "echo"}, 2, "", `no server named "nope" in the config`},
		{"unknown server in json", []string{"nope", "echo", "--json"}, 2, "{\n  \"error\": {\n    \"kind\": \"config\",\n    \"message\": \"no server named \\\"nope\\\" in the config\"\n  }\n}\n", ""},
		{"bad args", []string{"shop", "echo", "--args", "[1]"}, 2, "", "--args: not a JSON object"},
		{"usage", []string{"shop"}, 2, "", "usage: call SERVER TOOL"},
		{"usage in json", []string{"shop", "--json"}, 2, "{\n  \"error\": {\n    \"kind\": \"config\",\n    \"message\": \"usage: call SERVER TOOL [--args JSON]\"\n  }\n}\n", ""},
		{"bad url", []string{"--url", "nope", "echo"}, 2, "", `--url: "nope" is not an http(s) URL`},
		{"ad-hoc", []string{"--url", url, "--transport", "http", "echo", "--approve", "auto"}, 0, "hello\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := cmdtest.Factory(t, cfg, "")
			err := cmdtest.Parse(NewCmdCall(f, nil), tc.args...)
			if cmdtest.Code(err) != tc.code {
				t.Fatalf("exit %d (%v), want %d\nstdout: %s\nstderr: %s", cmdtest.Code(err), err, tc.code, s.Out.String(), s.ErrOut.String())
			}
			if prefix, ok := strings.CutSuffix(tc.stdout, "…"); ok {
				if !strings.HasPrefix(s.Out.String(), prefix) {
					t.Errorf("stdout\n%s\nwant it to start\n%s", s.Out.String(), prefix)
				}
			} else if s.Out.String() != tc.stdout {
				t.Errorf("stdout\n%q\nwant\n%q", s.Out.String(), tc.stdout)
			}
			if tc.errContain != "" && (err == nil || !strings.Contains(err.Error(), tc.errContain)) {
				t.Errorf("error %v, want %q", err, tc.errContain)
			}
		})
	}
}
