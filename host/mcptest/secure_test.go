package mcptest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// TestSecureCallRules sends raw tools/call requests carrying secureArguments
// (mcp-go cannot) over both transports and eras.
func TestSecureCallRules(t *testing.T) {
	validSecure := map[string]any{"project_id": canaryProject, "instance": canaryInstance, "session_token": canaryToken}
	cases := []struct {
		name       string
		opts       func(*Options)
		exts       []string // declared by the client; nil = none
		params     map[string]any
		wantCode   int // 0: a result
		wantMsg    string
		wantStatus int // HTTP status of the answer
		wantText   string
	}{
		{
			name:       "valid call names secure args without values",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "SELECT 1"}, "secureArguments": validSecure},
			wantStatus: 200,
			wantText:   `"secureArgumentNames":["instance","project_id","session_token"]`,
		},
		{
			name:       "secure name in arguments",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q", "instance": canaryInstance}, "secureArguments": validSecure},
			wantCode:   CodeInvalidParams,
			wantMsg:    `parameter "instance" is secure and must not be passed in arguments`,
			wantStatus: 400,
		},
		{
			name:       "missing required secure parameter",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}, "secureArguments": map[string]any{"project_id": canaryProject}},
			wantCode:   CodeInvalidParams,
			wantMsg:    `missing required secure parameter "instance" in secureArguments`,
			wantStatus: 400,
		},
		{
			name:       "secureArguments not an object",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}, "secureArguments": canaryToken},
			wantCode:   CodeInvalidParams,
			wantMsg:    "secureArguments must be an object",
			wantStatus: 400,
		},
		{
			name:       "integer type enforced",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "typed", "secureArguments": map[string]any{"count": 1.5}},
			wantCode:   CodeInvalidParams,
			wantMsg:    `secure parameter "count" must be of type integer`,
			wantStatus: 400,
		},
		{
			name:       "boolean type enforced, value not echoed",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "typed", "secureArguments": map[string]any{"flag": canaryToken}},
			wantCode:   CodeInvalidParams,
			wantMsg:    `secure parameter "flag" must be of type boolean`,
			wantStatus: 400,
		},
		{
			name:       "type union accepted",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "typed", "secureArguments": map[string]any{"count": 3, "flag": true, "label": nil}},
			wantStatus: 200,
			wantText:   `"secureArgumentNames":["count","flag","label"]`,
		},
		{
			name:       "additionalProperties false rejects undeclared names",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "typed", "secureArguments": map[string]any{"extra": 1}},
			wantCode:   CodeInvalidParams,
			wantMsg:    `unknown secure parameter "extra" in secureArguments`,
			wantStatus: 400,
		},
		{
			name:       "without the extension: -32021 with the spec data",
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}, "secureArguments": validSecure},
			wantCode:   CodeMissingCapability,
			wantMsg:    "Missing required client capability: io.modelcontextprotocol/secure-params",
			wantStatus: 400,
		},
		{
			name:       "an alias extension id negotiates",
			opts:       func(o *Options) { o.Extensions = []string{"com.google.cloud/toolbox.v1"} },
			exts:       []string{"com.google.cloud/toolbox.v1"},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}, "secureArguments": validSecure},
			wantStatus: 200,
			wantText:   `"tool":"execute_sql"`,
		},
		{
			name:       "a declared extension the server does not advertise does not negotiate",
			opts:       func(o *Options) { o.Extensions = []string{"com.google.cloud/toolbox.v1"} },
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}, "secureArguments": validSecure},
			wantCode:   CodeMissingCapability,
			wantMsg:    "Missing required client capability: com.google.cloud/toolbox.v1",
			wantStatus: 400,
		},
		{
			name:       "unknown tool: -32601",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "nope"},
			wantCode:   CodeMethodNotFound,
			wantMsg:    "Tool not found",
			wantStatus: 404,
		},
		{
			name:       "unknown tool, Toolbox style: -32602",
			opts:       func(o *Options) { o.UnknownToolCode = CodeInvalidParams },
			params:     map[string]any{"name": "nope"},
			wantCode:   CodeInvalidParams,
			wantMsg:    `invalid tool name: tool with name "nope" does not exist`,
			wantStatus: 400,
		},
		{
			name:       "errors with HTTP 200 (Toolbox)",
			opts:       func(o *Options) { o.ErrorStatus = ErrorStatus200 },
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"}},
			wantCode:   CodeInvalidParams,
			wantMsg:    `missing required secure parameter "project_id" in secureArguments`,
			wantStatus: 200,
		},
		{
			name:       "plain tool accepts secureArguments",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}, "secureArguments": map[string]any{"stray": canaryToken}},
			wantStatus: 200,
			wantText:   `"secureArgumentNames":["stray"]`,
		},
		{
			name:       "echoSecure returns the values",
			exts:       []string{SecureParamsExtension},
			params:     map[string]any{"name": "echo_secure", "secureArguments": map[string]any{"token": canaryToken}},
			wantStatus: 200,
			wantText:   canaryToken,
		},
	}
	for _, tr := range transports {
		for _, modern := range []bool{false, true} {
			era := map[bool]string{false: "legacy", true: "modern"}[modern]
			for _, tc := range cases {
				t.Run(tr+"/"+era+"/"+tc.name, func(t *testing.T) {
					opts := testOptions(t)
					if tc.opts != nil {
						tc.opts(&opts)
					}
					peer, srv := newRPC(t, tr, modern, tc.exts, opts)
					resp, status := peer.call("tools/call", tc.params)
					if tr == "http" && status != tc.wantStatus {
						t.Errorf("HTTP status %d, want %d", status, tc.wantStatus)
					}
					raw, _ := json.Marshal(resp)
					if tc.wantCode != 0 {
						if resp.Error == nil || resp.Error.Code != tc.wantCode || resp.Error.Message != tc.wantMsg {
							t.Fatalf("answer %s, want error %d %q", raw, tc.wantCode, tc.wantMsg)
						}
						for _, canary := range []string{canaryProject, canaryInstance, canaryToken} {
							if strings.Contains(string(raw), canary) {
								t.Errorf("error answer leaks a secure value: %s", raw)
							}
						}
						if tc.wantCode == CodeMissingCapability {
							id := strings.TrimPrefix(tc.wantMsg, "Missing required client capability: ")
							want := `{"requiredCapabilities":{"extensions":{"` + id + `":{}}}}`
							if string(resp.Error.Data) != want {
								t.Errorf("-32021 data %s, want %s", resp.Error.Data, want)
							}
						}
						return
					}
					if resp.Error != nil {
						t.Fatalf("unexpected error %s", raw)
					}
					var result struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
						ResultType string `json:"resultType"`
					}
					if err := json.Unmarshal(resp.Result, &result); err != nil || len(result.Content) != 1 {
						t.Fatalf("result %s", resp.Result)
					}
					if !strings.Contains(result.Content[0].Text, tc.wantText) {
						t.Errorf("text %q lacks %q", result.Content[0].Text, tc.wantText)
					}
					if tc.wantText != canaryToken && strings.Contains(string(resp.Result), "canary-") {
						t.Errorf("result leaks a secure value: %s", resp.Result)
					}
					if modern != (result.ResultType == "complete") {
						t.Errorf("resultType %q in %s era", result.ResultType, era)
					}
					// The wire kept what the host sent, values included.
					if sent, ok := tc.params["secureArguments"]; ok {
						calls := srv.Recording().Messages("tools/call")
						want, _ := json.Marshal(sent)
						if got := calls[len(calls)-1].Params()["secureArguments"]; string(wire.Canonical(got)) != string(wire.Canonical(want)) {
							t.Errorf("recorded secureArguments %s, want %s", got, want)
						}
					}
				})
			}
		}
	}
}

func TestErrorStatusModes(t *testing.T) {
	cases := []struct {
		mode                string
		legacyTool, modernT int
		legacyUnknownMethod int
	}{
		{ErrorStatusSEP, 400, 400, 200},
		{ErrorStatusModern, 200, 400, 200},
		{ErrorStatus200, 200, 200, 200},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			opts := testOptions(t)
			opts.ErrorStatus = tc.mode
			for _, modern := range []bool{false, true} {
				peer, _ := newRPC(t, "http", modern, nil, opts)
				_, status := peer.call("tools/call", map[string]any{"name": "execute_sql"})
				want := map[bool]int{false: tc.legacyTool, true: tc.modernT}[modern]
				if status != want {
					t.Errorf("modern=%v: -32021 answered with HTTP %d, want %d", modern, status, want)
				}
				if !modern {
					if resp, status := peer.call("resources/list", nil); status != tc.legacyUnknownMethod || resp.Error == nil || resp.Error.Code != CodeMethodNotFound {
						t.Errorf("legacy unknown method: %d %+v", status, resp.Error)
					}
				}
			}
		})
	}
}

// TestModernHTTPValidation covers SEP-2243 header rules and _meta checks.
func TestModernHTTPValidation(t *testing.T) {
	url, _ := StartHTTP(t, testOptions(t))
	meta := ModernMeta(SecureParamsExtension)
	call := func(name string, secure map[string]any) map[string]any {
		return map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": name, "secureArguments": secure, "_meta": meta}}
	}
	noCaps := map[string]any{wire.MetaProtocolVersion: wire.ModernVersion}
	future := ModernMeta()
	future[wire.MetaProtocolVersion] = "2027-01-01"
	region := map[string]any{"region": "eu-west-1"}
	cases := []struct {
		name     string
		msg      map[string]any
		header   http.Header
		wantCode int // 0: success
		status   int
	}{
		{"valid with mirrored header", call("routed", region), http.Header{"Mcp-Param-Region": {"eu-west-1"}}, 0, 200},
		{"base64 header form", call("routed", region), http.Header{"Mcp-Param-Region": {"=?base64?ZXUtd2VzdC0x?="}}, 0, 200},
		{"x-mcp-header missing", call("routed", region), nil, CodeHeaderMismatch, 400},
		{"x-mcp-header differs", call("routed", region), http.Header{"Mcp-Param-Region": {"us-east-1"}}, CodeHeaderMismatch, 400},
		{"Mcp-Method differs", call("echo", nil), http.Header{"Mcp-Method": {"tools/list"}}, CodeHeaderMismatch, 400},
		{"Mcp-Name differs", call("echo", nil), http.Header{"Mcp-Name": {"other"}}, CodeHeaderMismatch, 400},
		{"protocol header differs", call("echo", nil), http.Header{"Mcp-Protocol-Version": {"2025-11-25"}}, CodeHeaderMismatch, 400},
		{"no client capabilities", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": noCaps}}, nil, CodeInvalidParams, 400},
		{"unsupported version", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": map[string]any{"_meta": future}}, nil, CodeUnsupportedVersion, 400},
		{"legacy method in modern era", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": map[string]any{"_meta": meta}}, nil, CodeMethodNotFound, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PostMessage(ctxTimeout(t, 5e9), url, tc.header, tc.msg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := res.Response()
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tc.status {
				t.Errorf("status %d, want %d", res.Status, tc.status)
			}
			if tc.wantCode == 0 {
				if resp.Error != nil {
					t.Errorf("unexpected error %+v", resp.Error)
				}
				return
			}
			if resp.Error == nil || resp.Error.Code != tc.wantCode {
				t.Errorf("answer %s, want code %d", res.Body, tc.wantCode)
			}
			if tc.wantCode == CodeUnsupportedVersion && !strings.Contains(string(resp.Error.Data), `"supported":["2026-07-28"]`) {
				t.Errorf("data %s", resp.Error.Data)
			}
		})
	}
}

func TestLegacyHTTPSessions(t *testing.T) {
	url, srv := StartHTTP(t, testOptions(t))
	ctx := ctxTimeout(t, 5e9)
	list := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
	if res, _ := PostMessage(ctx, url, nil, list); res.Status != http.StatusBadRequest {
		t.Errorf("no session: %d, want 400", res.Status)
	}
	if res, _ := PostMessage(ctx, url, http.Header{"Mcp-Session-Id": {"bogus"}}, list); res.Status != http.StatusNotFound {
		t.Errorf("unknown session: %d, want 404", res.Status)
	}
	peer := &httpRPC{t: t, url: url}
	if resp, _ := peer.call("initialize", map[string]any{"protocolVersion": "2025-03-26"}); resp.Error != nil {
		t.Fatal(resp.Error)
	}
	if peer.session == "" {
		t.Fatal("initialize minted no Mcp-Session-Id")
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(lastSentResult(t, srv, "initialize")["protocolVersion"], &init.ProtocolVersion)
	if init.ProtocolVersion != "2025-03-26" {
		t.Errorf("server did not accept the client's supported version: %q", init.ProtocolVersion)
	}
	if resp, status := peer.call("ping", nil); status != 200 || resp.Error != nil {
		t.Errorf("ping in session: %d %+v", status, resp.Error)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(wire.HeaderSessionID, peer.session)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("DELETE: %d", res.StatusCode)
	}
	if res, _ := PostMessage(ctx, url, http.Header{"Mcp-Session-Id": {peer.session}}, list); res.Status != http.StatusNotFound {
		t.Errorf("deleted session: %d, want 404", res.Status)
	}
}
