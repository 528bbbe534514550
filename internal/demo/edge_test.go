package demo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func demoTools(t testing.TB) map[string]*demoTool {
	t.Helper()
	tools, _, err := parseTools(toolsJSON)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

const canary = "CANARY-7f3a-secret-value"

func TestCheckCall(t *testing.T) {
	tools := demoTools(t)
	full := `"secureArguments":{"project_id":"p","instance":"checkout","token":"` + canary + `"}`
	for _, tc := range []struct {
		name    string
		params  string
		want    map[string]string // nil: no values (refused, or not a demo tool)
		wantErr string            // "" : accepted
	}{
		{"valid", `{"name":"execute_sql","arguments":{"query":"SELECT 1"},` + full + `}`,
			map[string]string{"project_id": "p", "instance": "checkout", "token": canary}, ""},
		{"secure name in arguments", `{"name":"execute_sql","arguments":{"query":"SELECT 1","instance":"payroll"},` + full + `}`,
			nil, `parameter "instance" is secure`},
		{"secure name in arguments, other case", `{"name":"execute_sql","arguments":{"Instance":"payroll"},` + full + `}`,
			nil, `parameter "Instance" is secure`},
		{"required secure value missing", `{"name":"delete_rows","arguments":{},"secureArguments":{"project_id":"p","instance":"checkout"}}`,
			nil, `missing required secure parameter "token"`},
		{"no secureArguments", `{"name":"drop_database","arguments":{"confirm":true}}`,
			nil, `missing required secure parameter "project_id"`},
		{"undeclared secure name", `{"name":"execute_sql","arguments":{},"secureArguments":{"project_id":"p","instance":"checkout","token":"t","region":"eu"}}`,
			nil, `unknown secure parameter "region"`},
		{"secure value not a string", `{"name":"execute_sql","arguments":{},"secureArguments":{"project_id":"p","instance":"checkout","token":{"v":"` + canary + `"}}}`,
			nil, `secure parameter "token" must be of type string`},
		{"params not an object", `["execute_sql"]`, nil, "not an object"},
		{"arguments not an object", `{"name":"execute_sql","arguments":"` + canary + `"}`, nil, "not an object"},
		{"a tool the demo does not have", `{"name":"nope","arguments":{"instance":"x"}}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rerr := checkCall(tools, json.RawMessage(tc.params))
			if tc.wantErr == "" {
				if rerr != nil {
					t.Fatalf("refused: %s", rerr.Message)
				}
			} else {
				if rerr == nil {
					t.Fatalf("accepted, want an error with %q", tc.wantErr)
				}
				if rerr.Code != codeInvalidParams || !strings.Contains(rerr.Message, tc.wantErr) {
					t.Errorf("error %d %q, want %d with %q", rerr.Code, rerr.Message, codeInvalidParams, tc.wantErr)
				}
				if strings.Contains(rerr.Message, canary) {
					t.Errorf("the error shows a secure value: %q", rerr.Message)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("values %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("value of %s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// FuzzCheckCall: whatever the params, checkCall does not panic, and a call
// of a demo tool whose arguments name one of its secure parameters (in any
// case) is always refused.
func FuzzCheckCall(f *testing.F) {
	tools := demoTools(f)
	for _, seed := range []string{
		`{"name":"execute_sql","arguments":{"query":"SELECT 1"},"secureArguments":{"project_id":"p","instance":"checkout","token":"t"}}`,
		`{"name":"execute_sql","arguments":{"INSTANCE":"payroll"},"secureArguments":{"project_id":"p","instance":"checkout","token":"t"}}`,
		`{"name":"delete_rows","arguments":null,"secureArguments":null}`,
		`{"name":"drop_database","secureArguments":{"token":1}}`,
		`{}`, `null`, `[]`, `"x"`, `{"name":1}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		values, rerr := checkCall(tools, params)
		var p struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(params, &p) != nil {
			return
		}
		tool, ok := tools[p.Name]
		if !ok {
			return
		}
		for name := range p.Arguments {
			for s := range tool.secure {
				if strings.EqualFold(name, s) && rerr == nil {
					t.Fatalf("arguments name secure %q, accepted with %d values", name, len(values))
				}
			}
		}
	})
}

// TestEdge drives the edge with a stand-in for mcp-go's server: refused
// calls never reach it, accepted ones carry their secure values in the
// context, and tools/list gains secureInputSchema in toolsJSON's order.
func TestEdge(t *testing.T) {
	tools := demoTools(t)
	var reached []map[string]string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			t.Errorf("next got an unreadable body: %v", err)
		}
		values, _ := r.Context().Value(secureArgsKey{}).(map[string]string)
		reached = append(reached, values)
		w.Header().Set("Content-Type", "application/json")
		switch msg.Method {
		case "tools/list":
			// mcp-go lists by name, without secureInputSchema.
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"tools":[` +
				`{"name":"delete_rows","inputSchema":{"type":"object"},"annotations":{}},` +
				`{"name":"drop_database","inputSchema":{"type":"object"},"annotations":{}},` +
				`{"name":"execute_sql","inputSchema":{"type":"object"},"annotations":{}},` +
				`{"name":"extra","inputSchema":{"type":"object"}}]}}`))
		default:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{}}`))
		}
	})
	edge := &secureEdge{next: next, tools: tools}
	post := func(body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		edge.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)))
		return rec
	}

	t.Run("a refused call does not reach the server", func(t *testing.T) {
		reached = nil
		rec := post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_sql","arguments":{"instance":"payroll"},"secureArguments":{"project_id":"p","instance":"checkout","token":"` + canary + `"}}}`)
		if len(reached) != 0 {
			t.Fatalf("the refused call reached the server")
		}
		var resp struct {
			ID    int       `json:"id"`
			Error *rpcError `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Error == nil || resp.ID != 7 {
			t.Fatalf("not a JSON-RPC error for id 7: %s", rec.Body.String())
		}
		if resp.Error.Code != codeInvalidParams || strings.Contains(rec.Body.String(), canary) {
			t.Errorf("error %s", rec.Body.String())
		}
	})

	t.Run("an accepted call carries its secure values", func(t *testing.T) {
		reached = nil
		post(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"execute_sql","arguments":{"query":"SELECT 1"},"secureArguments":{"project_id":"p","instance":"checkout","token":"tok"}}}`)
		if len(reached) != 1 || reached[0]["instance"] != "checkout" || reached[0]["token"] != "tok" {
			t.Fatalf("the handler saw %v", reached)
		}
	})

	t.Run("other requests pass without secure values", func(t *testing.T) {
		reached = nil
		post(`{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		if len(reached) != 1 || reached[0] != nil {
			t.Fatalf("the handler saw %v", reached)
		}
	})

	t.Run("tools/list carries the full definitions in order", func(t *testing.T) {
		rec := post(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`)
		var resp struct {
			Result struct {
				Tools []struct {
					Name              string          `json:"name"`
					SecureInputSchema json.RawMessage `json:"secureInputSchema"`
					Annotations       struct {
						Category string `json:"category"`
					} `json:"annotations"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%v: %s", err, rec.Body.String())
		}
		var names []string
		for _, tool := range resp.Result.Tools {
			names = append(names, tool.Name)
			if tool.Name == "extra" {
				continue
			}
			if len(tool.SecureInputSchema) == 0 || tool.Annotations.Category == "" {
				t.Errorf("%s lacks secureInputSchema or its risk annotations", tool.Name)
			}
		}
		if got := strings.Join(names, ","); got != "execute_sql,delete_rows,drop_database,extra" {
			t.Errorf("tools listed as %s", got)
		}
	})

	t.Run("an oversized request is refused", func(t *testing.T) {
		reached = nil
		rec := post(`{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"` + strings.Repeat("x", maxRequestBody) + `"}}`)
		if rec.Code != http.StatusRequestEntityTooLarge || len(reached) != 0 {
			t.Errorf("status %d, reached %d", rec.Code, len(reached))
		}
	})
}

func TestOverlayTools(t *testing.T) {
	tools := demoTools(t)
	for _, tc := range []struct {
		name, body string
		wantErr    bool
		same       bool
	}{
		{"a JSON-RPC error passes through", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"x"}}`, false, true},
		{"not JSON", `event: message`, true, false},
		{"tools not a list", `{"jsonrpc":"2.0","id":1,"result":{"tools":{}}}`, true, false},
		{"result not an object", `{"jsonrpc":"2.0","id":1,"result":[]}`, true, false},
		{"an empty list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := overlayTools([]byte(tc.body), tools)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %t", err, tc.wantErr)
			}
			if tc.same && !bytes.Equal(out, []byte(tc.body)) {
				t.Errorf("rewritten: %s", out)
			}
		})
	}
}
