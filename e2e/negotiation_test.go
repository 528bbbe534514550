package e2e

import (
	"encoding/json"
	"testing"
)

// negotiationTools: one tool with secure parameters, one plain tool.
func negotiationTools(t *testing.T) string {
	return writeJSON(t, t.TempDir(), "tools.json", []obj{
		{
			"name":        "execute_sql",
			"description": "Executes a SQL query.",
			"inputSchema": obj{"type": "object", "properties": obj{"query": obj{"type": "string"}}, "required": []string{"query"}},
			"secureInputSchema": obj{"type": "object", "properties": obj{
				"instance":   obj{"type": "string"},
				"project_id": obj{"type": "string"},
			}, "required": []string{"instance", "project_id"}},
		},
		{"name": "echo", "inputSchema": obj{"type": "object", "properties": obj{"text": obj{"type": "string"}}}},
	})
}

// TestNegotiationPerEra checks on the wire that the extension is declared in
// `initialize` (2025-11-25) or in every request's _meta (2026-07-28), only to
// servers that have bindings, over stdio and streamable HTTP.
func TestNegotiationPerEra(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		for _, era := range []struct{ configured, negotiated string }{
			{legacyVersion, legacyVersion},
			{modernVersion, modernVersion},
			{"auto", modernVersion},
		} {
			t.Run(transport+"/"+era.configured, func(t *testing.T) {
				t.Parallel()
				tools := negotiationTools(t)
				dir := t.TempDir()
				servers := obj{}
				records := map[string]string{}
				for _, name := range []string{"bound", "unbound"} {
					var entry obj
					if transport == "stdio" {
						records[name] = dir + "/" + name + ".jsonl"
						entry = stdioServer(tools, records[name])
					} else {
						s := startHTTPServer(t, tools)
						records[name] = s.record
						entry = obj{"url": s.url}
					}
					entry["protocolVersion"] = era.configured
					servers[name] = entry
				}
				cfg := writeConfig(t, obj{
					"mcpServers": servers,
					"bindings": []obj{{"server": "bound", "params": values(map[string]any{
						"instance": "checkout", "project_id": "retail-prod",
					})}},
				})

				r := run(t, nil, "--config", cfg, "servers", "--json")
				wantCode(t, r, 0)
				doc := decodeStdout[serversDoc](t, r)
				for name, wantSecure := range map[string]bool{"bound": true, "unbound": false} {
					s := doc.server(t, name)
					if s.Status != "connected" {
						t.Fatalf("%s: status %q, want connected\n%s", name, s.Status, r)
					}
					if s.ProtocolVersion == nil || *s.ProtocolVersion != era.negotiated {
						t.Errorf("%s: protocolVersion %v, want %s", name, s.ProtocolVersion, era.negotiated)
					}
					if s.SecureParams != wantSecure {
						t.Errorf("%s: secureParams %t, want %t", name, s.SecureParams, wantSecure)
					}
				}

				// A call adds tools/call to the requests whose _meta is checked.
				r = run(t, nil, "--config", cfg, "call", "bound", "execute_sql", "--args", `{"query":"SELECT 1"}`, "--json")
				wantCode(t, r, 0)
				r = run(t, nil, "--config", cfg, "call", "unbound", "echo", "--args", `{"text":"hi"}`, "--json")
				wantCode(t, r, 0)

				for name, wantDeclared := range map[string]bool{"bound": true, "unbound": false} {
					recs := readRecord(t, records[name])
					if len(withMethod(recs, "tools/call")) != 1 {
						t.Fatalf("%s: want one tools/call on the wire, got methods %v", name, methods(recs))
					}
					if era.negotiated == legacyVersion {
						checkLegacyHandshake(t, name, recs, wantDeclared)
					} else {
						checkModernRequests(t, name, recs, wantDeclared, transport == "http")
					}
				}
			})
		}
	}
}

func checkLegacyHandshake(t *testing.T, name string, recs []recorded, wantDeclared bool) {
	t.Helper()
	if got := withMethod(recs, "server/discover"); len(got) != 0 {
		t.Errorf("%s: pinned to %s but server/discover was sent", name, legacyVersion)
	}
	inits := withMethod(recs, "initialize")
	if len(inits) == 0 {
		t.Fatalf("%s: no initialize recorded; methods %v", name, methods(recs))
	}
	for _, init := range inits {
		params := init.rpc().Params
		if v := jsonField[string](t, params, "protocolVersion"); v != legacyVersion {
			t.Errorf("%s: initialize protocolVersion %q, want %s", name, v, legacyVersion)
		}
		if got := hasExtension(params["capabilities"]); got != wantDeclared {
			t.Errorf("%s: initialize declares %s: %t, want %t; capabilities %s",
				name, secureExt, got, wantDeclared, params["capabilities"])
		}
	}
}

func checkModernRequests(t *testing.T, name string, recs []recorded, wantDeclared, overHTTP bool) {
	t.Helper()
	if got := withMethod(recs, "initialize"); len(got) != 0 {
		t.Errorf("%s: modern era but initialize was sent", name)
	}
	if len(withMethod(recs, "server/discover")) == 0 {
		t.Fatalf("%s: no server/discover recorded; methods %v", name, methods(recs))
	}
	requests := 0
	for _, r := range recs {
		if !r.isRequest() {
			continue
		}
		requests++
		method := r.rpc().Method
		meta := metaOf(r)
		var version string
		_ = json.Unmarshal(meta[metaProtocol], &version)
		if version != modernVersion {
			t.Errorf("%s: %s _meta protocolVersion %q, want %s", name, method, version, modernVersion)
		}
		caps, ok := meta[metaCapabilities]
		if !ok {
			t.Errorf("%s: %s has no _meta[%q]", name, method, metaCapabilities)
			continue
		}
		if got := hasExtension(caps); got != wantDeclared {
			t.Errorf("%s: %s declares %s: %t, want %t; capabilities %s", name, method, secureExt, got, wantDeclared, caps)
		}
		if overHTTP {
			if got := r.Headers["Mcp-Protocol-Version"]; got != modernVersion {
				t.Errorf("%s: %s header Mcp-Protocol-Version %q, want %s", name, method, got, modernVersion)
			}
		}
	}
	if requests < 3 { // server/discover, tools/list, tools/call at least
		t.Errorf("%s: only %d requests recorded: %v", name, requests, methods(recs))
	}
}
