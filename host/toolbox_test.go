package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// A Toolbox tool (Toolbox's own example): query from the model, customer_id
// out of band. Toolbox lists every secure parameter as required; this one
// leaves it out of required, which Toolbox's rule overrides.
const toolboxTools = `[
 {"name": "search_customer_records", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
  "secureInputSchema": {"type": "object", "properties": {"customer_id": {"type": "string"}}},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}
]`

const toolboxID = config.ToolboxSecureParamsExtension

func toolboxHost(t *testing.T, era string, extensions []string, bind bool) (*Host, *mcptest.Server) {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(toolboxTools), Toolbox: true,
		Extensions: []string{toolboxID}, ErrorStatus: mcptest.ErrorStatus200, UnknownToolCode: mcptest.CodeInvalidParams})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"tb": {URL: url, Type: config.TransportHTTP, ProtocolVersion: era,
			TrustAnnotations: true, CallTimeout: 5 * time.Second, SecureParams: config.SecureParams{Extensions: extensions}}},
		Approvals: rules.Config{Rules: []rules.Rule{{ID: "all", Decide: "allow"}}},
	}
	if bind {
		cfg.Bindings = []config.Binding{{Server: "tb", Params: map[string]config.ParamBinding{"customer_id": {Session: "customer"}}}}
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if err := h.Refresh(context.Background(), "tb"); err != nil {
		t.Fatal(err)
	}
	return h, srv
}

// Toolbox hides its tools with secure parameters from a client that does
// not declare com.google.cloud/toolbox.v1, and lists them only on
// 2026-07-28: each way they would vanish, the operator is told why.
func TestToolboxHiddenToolsAreExplained(t *testing.T) {
	tests := []struct {
		name       string
		era        string
		extensions []string
		bind       bool
		listed     bool
		warning    string // "" = none
	}{
		{"declared on 2026-07-28: listed", config.ProtocolModern, []string{toolboxID}, true, true, ""},
		{"both ids declared: listed", config.ProtocolAuto, []string{config.DefaultSecureParamsExtension, toolboxID}, true, true, ""},
		{"no binding, id not configured", config.ProtocolModern, nil, false, false,
			"add " + toolboxID + " to mcpServers.tb.secureParams.extensions"},
		{"bound but only the SEP-3221 id declared", config.ProtocolModern, nil, true, false,
			"supports secure parameters as " + toolboxID + ", which agenthost does not declare"},
		{"legacy protocol", config.ProtocolLegacy, []string{toolboxID}, true, false,
			"only on protocol 2026-07-28; this connection speaks 2025-11-25"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := toolboxHost(t, tc.era, tc.extensions, tc.bind)
			snap := h.Server("tb")
			listed := snap.Tool("search_customer_records") != nil
			if listed != tc.listed {
				t.Errorf("listed = %t, want %t", listed, tc.listed)
			}
			joined := strings.Join(snap.Warnings, "\n")
			switch {
			case tc.warning == "" && len(snap.Warnings) > 0:
				t.Errorf("unexpected warnings: %s", joined)
			case tc.warning != "" && !strings.Contains(joined, tc.warning):
				t.Errorf("warnings %q do not say %q", snap.Warnings, tc.warning)
			}
		})
	}
}

// Against Toolbox's rules: secure values go in secureArguments only, never
// a name secureInputSchema does not declare, and every secure parameter is
// required, so a call without its value is refused by the host (nothing
// sent) instead of being answered with a tool error.
func TestToolboxCalls(t *testing.T) {
	const canary = "cust-CANARY-4242"
	ctx := context.Background()
	h, srv := toolboxHost(t, config.ProtocolModern, []string{toolboxID}, true)

	s := h.NewSession(SessionOptions{Values: map[string]string{"customer": canary}})
	res, err := s.CallTool(ctx, "tb", "search_customer_records", json.RawMessage(`{"query":"recent"}`))
	if err != nil || res.IsError() {
		t.Fatalf("call: %v %+v", err, res)
	}
	calls := srv.Recording().Messages("tools/call")
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	var p struct {
		Params struct {
			Arguments       map[string]any `json:"arguments"`
			SecureArguments map[string]any `json:"secureArguments"`
			Meta            map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(calls[0].Message, &p); err != nil {
		t.Fatal(err)
	}
	if _, leaked := p.Params.Arguments["customer_id"]; leaked || p.Params.SecureArguments["customer_id"] != canary || len(p.Params.SecureArguments) != 1 {
		t.Errorf("arguments %v, secureArguments names %v", p.Params.Arguments, slices.Sorted(mapsKeys(p.Params.SecureArguments)))
	}
	caps, _ := p.Params.Meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	if _, ok := exts[toolboxID]; !ok {
		t.Errorf("the call's _meta does not declare %s: %v", toolboxID, p.Params.Meta)
	}

	// No value for customer_id: Toolbox requires it whatever the schema
	// says, so the host refuses before sending.
	s2 := h.NewSession(SessionOptions{})
	_, err = s2.CallTool(ctx, "tb", "search_customer_records", json.RawMessage(`{"query":"recent"}`))
	if KindOf(err) != KindBinding {
		t.Fatalf("call without the secure value: %v (kind %s), want a binding failure", err, KindOf(err))
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 1 {
		t.Errorf("the refused call was sent (%d calls)", n)
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("error holds the value: %v", err)
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Toolbox answers a call from a client that did not declare its id with
// -32021 and no data; the operator's error still names the id to add.
func TestToolboxMissingCapabilityNamesItsID(t *testing.T) {
	tools := `[{"name": "q", "inputSchema": {"type": "object"},
	  "x-test": {"errorCode": -32021, "errorMessage": "missing required client capability: tool \"q\" requires com.google.cloud/toolbox.v1 extension which is not supported by the client", "errorData": null}}]`
	h, _, _ := testHost(t, "", mcptest.Options{ToolsJSON: []byte(tools), ErrorStatus: mcptest.ErrorStatus200})
	_, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "q", json.RawMessage(`{}`))
	var he *Error
	if !errors.As(err, &he) || he.Kind != KindBinding {
		t.Fatalf("err = %v, want a binding error", err)
	}
	if !strings.Contains(he.Message, "the server requires the extension "+toolboxID+": add it to mcpServers.db.secureParams.extensions") {
		t.Errorf("the error does not name the id to configure: %s", he.Message)
	}
}
