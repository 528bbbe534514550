package secureparams

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// memoVerdict is everything the analysis decides for a tool.
type memoVerdict struct {
	Rule             Rule
	Reason           string
	Cost             int64
	Params, Required []string
	Headers          []HeaderBinding
	Warnings         []string
	HeaderTool       bool
}

func memoAnalyse(raw json.RawMessage) *memoVerdict {
	tool, err := ParseTool(raw)
	if err != nil {
		return nil
	}
	v := &memoVerdict{Cost: tool.ValidationCost(), Params: tool.SecureParams, Required: tool.SecureRequired, Headers: tool.SecureHeaders, Warnings: tool.Warnings, HeaderTool: tool.InputHeaderTool() != nil}
	var ex *ExclusionError
	if errors.As(Validate(tool), &ex) {
		v.Rule, v.Reason = ex.Rule, ex.Reason
	}
	return v
}

// secureMemoVerdicts analyses the tool (input, secure) without the memo,
// and with the memo after the tool (other, secure) filled it, twice.
func secureMemoVerdicts(other, input, secure string) (full, first, again *memoVerdict) {
	defer func() { secureMemoOn = true; secureMemo.reset() }()
	secureMemoOn = false
	secureMemo.reset()
	full = memoAnalyse(toolJSON(input, secure))
	secureMemoOn = true
	memoAnalyse(toolJSON(other, secure))
	first = memoAnalyse(toolJSON(input, secure))
	again = memoAnalyse(toolJSON(input, secure))
	return full, first, again
}

const headerSecure = `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"tenant_id":{"type":"string"}},"required":["tenant_id"],"allOf":[{"required":["region"]}]}`

// manyNodes is an inputSchema of n JSON values.
func manyNodes(n int) string {
	return `{"type":"object","enum":[` + strings.TrimSuffix(strings.Repeat(`1,`, n-3), ",") + `]}`
}

// TestSecureMemoKeepsVerdicts: a tool whose secure schema another tool
// filled the memo with gets the verdict the full analysis gives it, for
// each rule that reads both schemas and for the shared node budget.
func TestSecureMemoKeepsVerdicts(t *testing.T) {
	plain := `{"type":"object","properties":{"q":{"type":"string"}}}`
	tests := []struct {
		name, other, input, secure string
		rule                       Rule
	}{
		{"clean", plain, `{"type":"object","properties":{"n":{"type":"integer"}}}`, secureTenant, ""},
		{"overlap by name", plain, `{"type":"object","properties":{"tenant_id":{"type":"string"}}}`, secureTenant, RuleOverlap},
		{"overlap by the secure pattern", plain, `{"type":"object","properties":{"tenant_x":{}}}`, `{"type":"object","properties":{"tenant_id":{}},"patternProperties":{"^tenant_":{}}}`, RuleOverlap},
		{"same header as an input property", plain, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"region"}}}`, headerSecure, RuleHeader},
		{"headers of their own", plain, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Other"}}}`, headerSecure, ""},
		{"budget left for the secure schema", plain, manyNodes(MaxSchemaNodes - 40), secureTenant, ""},
		{"no budget left for the secure schema", plain, manyNodes(MaxSchemaNodes - 3), secureTenant, RuleLimits},
		{"input excluded first", plain, `{"type":"object","properties":{"a":{"$ref":"https://x/y"}}}`, secureTenant, RuleExternalRef},
		{"variant names warned", plain, `{"type":"object","properties":{"tenantId":{"type":"string"}}}`, secureTenant, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full, first, again := secureMemoVerdicts(tt.other, tt.input, tt.secure)
			if full == nil || full.Rule != tt.rule {
				t.Fatalf("full analysis: %+v, want rule %q", full, tt.rule)
			}
			if diff := cmp.Diff(full, first); diff != "" {
				t.Errorf("the memo changed the verdict (-full +memo):\n%s", diff)
			}
			if diff := cmp.Diff(full, again); diff != "" {
				t.Errorf("the memo changed the second verdict (-full +memo):\n%s", diff)
			}
		})
	}
}

// TestSecureMemoIsUsed: a tool whose secure schema is in the memo is
// analysed with less work (its secure schema is neither decoded nor walked
// again), and the memo is bounded.
func TestSecureMemoIsUsed(t *testing.T) {
	defer func() { secureMemoOn = true; secureMemo.reset() }()
	raw := toolJSON(`{"type":"object","properties":{"x":{}}}`, headerSecure)
	parse := func() {
		if _, err := ParseTool(raw); err != nil {
			t.Fatal(err)
		}
	}
	secureMemoOn = false
	without := testing.AllocsPerRun(20, parse)
	secureMemoOn = true
	parse() // fills the memo
	with := testing.AllocsPerRun(20, parse)
	if with >= without*3/4 {
		t.Fatalf("with the memo %.0f allocations a parse, without %.0f: the memo was not used", with, without)
	}
	for i := range maxSecureMemoEntries + 10 {
		secure := `{"type":"object","properties":{"t":{}},"description":"` + strings.Repeat("d", i) + `"}`
		memoAnalyse(toolJSON(`{"type":"object"}`, secure))
	}
	secureMemo.mu.Lock()
	entries, bytes := secureMemo.entries, secureMemo.bytes
	secureMemo.mu.Unlock()
	if entries == 0 || entries > maxSecureMemoEntries || bytes > maxSecureMemoBytes {
		t.Fatalf("memo holds %d entries, %d bytes; bounds %d, %d", entries, bytes, maxSecureMemoEntries, maxSecureMemoBytes)
	}
}

// FuzzSecureMemo: wherever the memo answers for a secure schema, the
// verdict is the full analysis's.
func FuzzSecureMemo(f *testing.F) {
	plain := `{"type":"object","properties":{"q":{"type":"string"}}}`
	f.Add(plain, `{"type":"object","properties":{"tenant_id":{"type":"string"}}}`, secureTenant)
	f.Add(plain, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"region"}}}`, headerSecure)
	f.Add(plain, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Other"}}}`, headerSecure)
	f.Add(plain, `{"type":"object","patternProperties":{"^ten":{}}}`, `{"type":"object","properties":{"tenant_id":{}},"patternProperties":{"^q":{}},"allOf":[{"required":["tenant_id"]}]}`)
	f.Add(`{"type":"object","properties":{"tenant_id":{}}}`, plain, `{"type":"object","properties":{"tenant_id":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":"string"}}}`)
	f.Add(plain, manyNodes(MaxSchemaNodes-12), secureTenant)
	f.Fuzz(func(t *testing.T, other, input, secure string) {
		full, first, again := secureMemoVerdicts(other, input, secure)
		if diff := cmp.Diff(full, first); diff != "" {
			t.Fatalf("other %s, input %s, secure %s: the memo changed the verdict (-full +memo):\n%s", other, input, secure, diff)
		}
		if diff := cmp.Diff(full, again); diff != "" {
			t.Fatalf("other %s, input %s, secure %s: the memo changed the second verdict (-full +memo):\n%s", other, input, secure, diff)
		}
	})
}
