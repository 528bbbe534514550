package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/mcptest"
)

// Every error a model call can meet tells the model one of the host's model
// texts and keeps the names of the server and tool for the operator: a
// swap of the two texts would hand the model the operator's detail.
func TestErrorTextsGoToTheirAudience(t *testing.T) {
	const unknownServer = "nosuch-server"
	// boom's error message, kaboom, holds its name.
	tools := strings.TrimSuffix(strings.TrimSpace(secureTools), "]") +
		`, {"name": "fails", "x-test": {"errorCode": -32603, "errorMessage": "kaboom"}, "inputSchema": {"type": "object"}}]`
	tests := []struct {
		name   string
		server string
		tool   string
		args   string
		values map[string]string
		prep   func(t *testing.T, s *Session) // runs before the failing call
		kind   Kind
		model  hosterr.ModelMsg
	}{
		{"unknown server", unknownServer, "echo", `{}`, nil, nil, KindUnavailable, hosterr.MsgUnavailable},
		{"unknown tool", "db", "no_such_tool", `{}`, nil, nil, KindUnavailable, hosterr.MsgUnavailable},
		{"arguments not JSON", "db", "echo", `{"text":`, nil, nil, KindToolError,
			hosterr.MsgNotJSONObject(errors.New("arguments are not valid JSON: unexpected end of JSON input"))},
		{"arguments not an object", "db", "echo", `[1]`, nil, nil, KindToolError,
			hosterr.MsgNotJSONObject(errors.New("arguments are not a JSON object"))},
		{"arguments do not match inputSchema", "db", "echo", `{"text":1}`, nil, nil, KindToolError, hosterr.ModelMsg{}},
		{"secure name in arguments", "db", "execute_sql", `{"query":"x","instance":"payroll"}`,
			map[string]string{"instance": "c"}, nil, KindBinding, hosterr.MsgInvalidArguments},
		{"duplicate key", "db", "echo", `{"text":"a","text":"b"}`, nil, nil, KindToolError, hosterr.MsgDuplicateKey},
		{"protected value in arguments", "db", "echo", `{"text":"` + canary + `"}`,
			map[string]string{"instance": canary}, func(t *testing.T, s *Session) {
				t.Helper()
				if _, err := s.CallTool(context.Background(), "db", "execute_sql", json.RawMessage(`{"query":"x"}`)); err != nil {
					t.Fatal(err)
				}
			}, KindBinding, hosterr.MsgSecretInArgs},
		{"secure value unbound", "db", "execute_sql", `{"query":"x"}`, nil, nil, KindBinding, hosterr.MsgOperatorFailure},
		{"server error", "db", "fails", `{}`, nil, nil, KindToolError, hosterr.MsgServerErrorText("kaboom")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, _ := testHost(t, "", mcptest.Options{ToolsJSON: []byte(tools)})
			s := h.NewSession(SessionOptions{Values: tc.values})
			if tc.prep != nil {
				tc.prep(t, s)
			}
			// As the agent loop calls: with the inputSchema check.
			_, err := s.callTool(context.Background(), tc.server, tc.tool, json.RawMessage(tc.args), callInfo{checkSchema: true, fromModel: true})
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("err = %v, want an *Error", err)
			}
			if he.Kind != tc.kind {
				t.Errorf("kind = %s, want %s", he.Kind, tc.kind)
			}
			if tc.model != (hosterr.ModelMsg{}) {
				if he.ModelMessage != tc.model.String() {
					t.Errorf("model message = %q, want %q", he.ModelMessage, tc.model.String())
				}
			} else if !strings.HasPrefix(he.ModelMessage, "Invalid arguments: ") {
				t.Errorf("model message = %q, want the validator's message", he.ModelMessage)
			}
			for _, name := range []string{tc.server, tc.tool, tc.server + "/" + tc.tool, canary} {
				if strings.Contains(he.ModelMessage, name) {
					t.Errorf("model message %q names %q", he.ModelMessage, name)
				}
			}
			if !strings.Contains(he.Message, tc.server) {
				t.Errorf("operator message %q does not name the server %q", he.Message, tc.server)
			}
			if strings.Contains(he.Message, canary) || strings.Contains(he.Error(), canary) {
				t.Errorf("operator message %q holds the protected value", he.Message)
			}
		})
	}
}
