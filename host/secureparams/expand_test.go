package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/host/secureparams/internal/expansion"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// defsBomb builds $defs a0..a(n-1) where each refers to the next twice
// through anyOf: 2^n applications to one value from about 50 bytes a level.
func defsBomb(n int, root string) string {
	defs := make([]string, n)
	for i := 0; i < n-1; i++ {
		defs[i] = fmt.Sprintf(`"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1)
	}
	defs[n-1] = fmt.Sprintf(`"a%d":{"type":"string"}`, n-1)
	return `{"type":"object",` + root + `,"$defs":{` + strings.Join(defs, ",") + `}}`
}

func TestSchemaExpansion(t *testing.T) {
	secureBomb := `{"type":"object","properties":{"tenant_id":{"$ref":"#/$defs/a0"}}` + strings.TrimPrefix(defsBomb(30, `"x":0`), `{"type":"object","x":0`)
	tests := []struct {
		name    string
		raw     json.RawMessage
		rule    Rule   // "" means accepted
		reason  string // substring of the reason
		maxCost int64  // accepted: ValidationCost at most this
		minCost int64  // accepted: ValidationCost at least this
	}{
		{name: "inputSchema $defs fan-out", raw: toolJSON(defsBomb(30, `"properties":{"q":{"$ref":"#/$defs/a0"}}`), ""), rule: RuleExpansion, reason: "inputSchema expands to more than 10000 subschema applications for one value"},
		{name: "inputSchema fan-out at the root", raw: toolJSON(defsBomb(20, `"$ref":"#/$defs/a0"`), secureTenant), rule: RuleExpansion, reason: "inputSchema"},
		{name: "secureInputSchema $defs fan-out", raw: toolJSON(`{"type":"object"}`, secureBomb), rule: RuleExpansion, reason: "secureInputSchema expands"},
		{name: "allOf fan-out", raw: toolJSON(`{"type":"object","properties":{"q":{"$ref":"#/$defs/b0"}},"$defs":{`+allOfLevels(16)+`}}`, ""), rule: RuleExpansion},
		{name: "recursion applying itself twice to one child", raw: toolJSON(`{"type":"object","anyOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`, ""), rule: RuleExpansion},
		{name: "properties and patternProperties on the same child, recursively", raw: toolJSON(`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"a":{"$ref":"#"}}}`, ""), rule: RuleExpansion},
		{name: "items and contains, recursively", raw: toolJSON(`{"type":"object","properties":{"l":{"$ref":"#/$defs/l"}},"$defs":{"l":{"type":"array","items":{"$ref":"#/$defs/l"},"contains":{"$ref":"#/$defs/l"}}}}`, ""), rule: RuleExpansion},

		{name: "keywords spelled with escapes", raw: toolJSON(strings.NewReplacer(`"anyOf"`, `"\u0061nyOf"`, `"$ref"`, `"\u0024ref"`).Replace(defsBomb(30, `"properties":{"q":{"$ref":"#/$defs/a0"}}`)), ""), rule: RuleExpansion},
		{name: "small fan-out", raw: toolJSON(defsBomb(8, `"properties":{"q":{"$ref":"#/$defs/a0"}}`), ""), minCost: 1 << 8, maxCost: 1 << 10},
		{name: "plain object", raw: toolJSON(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}}}`, secureTenant), minCost: 1, maxCost: 1},
		{name: "binary tree", raw: toolJSON(`{"type":"object","properties":{"left":{"$ref":"#"},"right":{"$ref":"#"},"v":{"type":"number"}}}`, ""), minCost: 2, maxCost: 2},
		{name: "any JSON value", raw: toolJSON(`{"type":"object","properties":{"v":{"$ref":"#/$defs/j"}},"$defs":{"j":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"array","items":{"$ref":"#/$defs/j"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/j"}}]}}}`, ""), minCost: 6, maxCost: 6},
		{name: "recursive map with declared members", raw: toolJSON(`{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}},"additionalProperties":{"$ref":"#"}}`, ""), minCost: 2, maxCost: 2},
		{name: "recursive tuple", raw: toolJSON(`{"type":"object","properties":{"t":{"$ref":"#/$defs/t"}},"$defs":{"t":{"type":"array","prefixItems":[{"type":"string"},{"$ref":"#/$defs/t"}],"items":{"$ref":"#/$defs/t"}}}}`, ""), minCost: 2, maxCost: 2},
		{name: "propertyNames fan-out", raw: toolJSON(`{"type":"object","properties":{"m":{"type":"object","propertyNames":{"$ref":"#/$defs/a0"}}}`+strings.TrimPrefix(defsBomb(20, `"x":0`), `{"type":"object","x":0`), ""), rule: RuleExpansion},
		{name: "ref chain", raw: toolJSON(refChain(50), ""), minCost: 51, maxCost: 51},
		{name: "many properties", raw: toolJSON(manyProperties(2000), ""), minCost: 1, maxCost: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := ParseTool(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(tool)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want accepted", err)
				}
				if c := tool.ValidationCost(); c < tc.minCost || c > tc.maxCost {
					t.Fatalf("ValidationCost = %d, want %d..%d", c, tc.minCost, tc.maxCost)
				}
				return
			}
			var ex *ExclusionError
			if !errors.As(err, &ex) {
				t.Fatalf("Validate = %v, want an exclusion", err)
			}
			if ex.Rule != tc.rule || !strings.Contains(ex.Reason, tc.reason) {
				t.Fatalf("exclusion %s: %q, want %s containing %q", ex.Rule, ex.Reason, tc.rule, tc.reason)
			}
			if tool.ValidationCost() != 0 {
				t.Fatalf("an excluded tool has ValidationCost %d", tool.ValidationCost())
			}
		})
	}
}

// allOfLevels builds $defs b0..b(n-1), each applying the next twice
// through allOf.
func allOfLevels(n int) string {
	defs := make([]string, n)
	for i := 0; i < n-1; i++ {
		defs[i] = fmt.Sprintf(`"b%d":{"allOf":[{"$ref":"#/$defs/b%d"},{"$ref":"#/$defs/b%d"}]}`, i, i+1, i+1)
	}
	defs[n-1] = fmt.Sprintf(`"b%d":{"minLength":1}`, n-1)
	return strings.Join(defs, ",")
}

func TestSchemaNumbers(t *testing.T) {
	tests := []struct {
		name   string
		raw    json.RawMessage
		rule   Rule
		reason string
	}{
		{name: "inputSchema multipleOf", raw: toolJSON(`{"type":"object","properties":{"n":{"multipleOf":1e-100000000}}}`, ""), rule: RuleNumber, reason: "inputSchema has a number at /properties/n/multipleOf"},
		{name: "inputSchema maximum", raw: toolJSON(`{"type":"object","properties":{"n":{"maximum":1e100000000}}}`, secureTenant), rule: RuleNumber, reason: "/properties/n/maximum"},
		{name: "inputSchema minLength", raw: toolJSON(`{"type":"object","properties":{"s":{"minLength":1E+100000000}}}`, ""), rule: RuleNumber},
		{name: "inputSchema long literal", raw: toolJSON(`{"type":"object","properties":{"n":{"minimum":`+strings.Repeat("9", 1001)+`}}}`, ""), rule: RuleNumber},
		{name: "secureInputSchema exclusiveMinimum", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"type":"number","exclusiveMinimum":-1e-2000000}}}`), rule: RuleNumber, reason: "secureInputSchema has a number at /properties/tenant_id/exclusiveMinimum"},
		{name: "secureInputSchema multipleOf", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"type":"number","multipleOf":1e-100000000}}}`), rule: RuleNumber},
		{name: "ordinary large numbers", raw: toolJSON(`{"type":"object","properties":{"n":{"maximum":1e308,"minimum":-1.5e-300,"multipleOf":0.001}}}`, `{"type":"object","properties":{"tenant_id":{"type":"number","maximum":1e1000}}}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := ParseTool(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			err = Validate(tool)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want accepted", err)
				}
				return
			}
			var ex *ExclusionError
			if !errors.As(err, &ex) || ex.Rule != tc.rule || !strings.Contains(ex.Reason, tc.reason) {
				t.Fatalf("Validate = %v, want %s containing %q", err, tc.rule, tc.reason)
			}
		})
	}
}

// TestValueNumbersNeverPanic: a secure value holding a number the validator
// cannot parse (a plugin's JSON object, coerced) is refused by name.
func TestValueNumbersNeverPanic(t *testing.T) {
	vs := mustCompile(t, `{"type":"object","properties":{"cfg":{"type":"object","properties":{"n":{"maximum":5}}},"items":{"type":"array","uniqueItems":true}}}`)
	cfg, err := vs.Coerce("cfg", `{"n":1e100000000}`)
	if err != nil {
		t.Fatal(err)
	}
	err = vs.Validate(map[string]any{"cfg": cfg})
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Param != "cfg" || !strings.Contains(ve.Reason, "number the validator cannot handle") {
		t.Fatalf("Validate = %v, want a ValueError for cfg", err)
	}
	list := `[` + strings.Repeat(`1,`, 25) + `1e100000000]`
	items, err := vs.Coerce("items", list)
	if err != nil {
		t.Fatal(err)
	}
	if err := vs.Validate(map[string]any{"items": items}); !errors.As(err, &ve) || ve.Param != "items" {
		t.Fatalf("Validate = %v, want a ValueError for items", err)
	}
}

// FuzzToolValidation: any tool definition (schemas from a server) is parsed,
// analysed and, when accepted, its secure schema compiled and its cost
// bounded, without a panic; an accepted tool's cost is within the limit.
func FuzzToolValidation(f *testing.F) {
	for _, raw := range []string{
		string(toolJSON(defsBomb(30, `"properties":{"q":{"$ref":"#/$defs/a0"}}`), "")),
		string(toolJSON(`{"type":"object","anyOf":[{"properties":{"a":{"$ref":"#"}}},{"properties":{"a":{"$ref":"#"}}}]}`, "")),
		string(toolJSON(`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"a":{"$ref":"#"}}}`, "")),
		string(toolJSON(`{"type":"object","properties":{"n":{"multipleOf":1e-100000000}}}`, "")),
		string(toolJSON(`{"type":"object","properties":{"n":{"maximum":1e100000000}}}`, secureTenant)),
		string(toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"type":"number","multipleOf":1e-100000000}}}`)),
		string(toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"minLength":1e100000000}}}`)),
		string(toolJSON(`{"type":"object","properties":{"v":{"$ref":"#/$defs/j"}},"$defs":{"j":{"anyOf":[{"type":"string"},{"type":"array","items":{"$ref":"#/$defs/j"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/j"}}]}}}`, secureTenant)),
		string(toolJSON(`{"$ref":"#/$defs/a","$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, "")),
		string(toolJSON(`{"type":"object","prefixItems":[{"$ref":"#"}],"items":{"$ref":"#"},"contains":{"$ref":"#"}}`, "")),
		string(realisticTool),
	} {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tool, err := ParseTool(json.RawMessage(raw))
		if err != nil {
			return
		}
		if Validate(tool) != nil {
			return
		}
		if c := tool.ValidationCost(); c < 1 || c > MaxSchemaExpansion {
			t.Fatalf("accepted tool with ValidationCost %d", c)
		}
		if tool.HasSecureSchema {
			vs, err := tool.ValueSchema()
			if err != nil {
				t.Fatalf("accepted tool whose secure schema does not compile: %v", err)
			}
			_ = vs.Validate(map[string]any{"tenant_id": "acme"})
		}
	})
}

// TestExpansionMemo: the expansion analysis of a schema text runs once
// (the same text listed again, by any server, takes the remembered result,
// which depends on the label and the text only), and the memo stays within
// its bounds.
func TestExpansionMemo(t *testing.T) {
	analyse := func(label, schema string) (int64, *expansion.Problem) {
		t.Helper()
		root, err := schemajson.DecodeValid([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		scan, p := scanSchema(json.RawMessage(schema), label, new(int(MaxSchemaNodes)), knownValid)
		if p != nil {
			t.Fatal(p.reason)
		}
		return expansion.Measure(label, []byte(schema), root, scan.anchors, scan.refs, scan.fanOut)
	}
	bomb := defsBomb(30, `"properties":{"q":{"$ref":"#/$defs/a0"}}`)
	_, first := analyse("inputSchema", bomb)
	_, again := analyse("inputSchema", bomb)
	if first == nil || again != first {
		t.Fatalf("the same schema text was analysed again (%p, %p)", first, again)
	}
	if _, other := analyse("secureInputSchema", bomb); other == first || !strings.HasPrefix(other.Reason, "secureInputSchema") {
		t.Errorf("another label took inputSchema's result: %v", other.Reason)
	}
	chain := refChain(5)
	if cost, p := analyse("inputSchema", chain); p != nil || cost != 6 {
		t.Fatalf("ref chain: %d, %v", cost, p)
	}
	if cost, p := analyse("inputSchema", chain); p != nil || cost != 6 {
		t.Fatalf("ref chain, remembered: %d, %v", cost, p)
	}
	for i := range expansion.MaxMemoEntries + 10 {
		analyse("inputSchema", fmt.Sprintf(`{"type":"object","properties":{"p%d":{"$ref":"#/$defs/d"}},"$defs":{"d":{"type":"string"}}}`, i))
		entries, bytes := expansion.MemoSize()
		if entries > expansion.MaxMemoEntries || bytes > expansion.MaxMemoBytes {
			t.Fatalf("the memo holds %d entries, %d bytes", entries, bytes)
		}
	}
}

// FuzzLeafShortcut: skipping the schema objects that hold none of the
// keywords the analysis reads (readsNothing), and measuring the schemas
// refOnlyExpansion accepts without the expansion graph, change no verdict: the same
// exclusion rule (and reason, but for the expansion rule, whose reason may
// name any of several equivalent pointers), the same validation cost, the
// same secure names and warnings as the analysis that looks every keyword
// up.
func FuzzLeafShortcut(f *testing.F) {
	for _, raw := range []string{
		string(realisticTool),
		string(toolJSON(defsBomb(12, `"properties":{"q":{"$ref":"#/$defs/a0"}}`), secureTenant)),
		string(toolJSON(`{"type":"object","properties":{"a":{"type":"string"},"b":{"items":{"type":"string"}},"tenant_id":{"description":"x"}}}`, secureTenant)),
		string(toolJSON(`{"type":"object","properties":{"v":{"$ref":"#/$defs/j"}},"$defs":{"j":{"anyOf":[{"type":"string"},{"type":"array","items":{"$ref":"#/$defs/j"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/j"}}]}}}`, secureTenant)),
		string(toolJSON(`{"type":"object","properties":{"o":{"dependentRequired":{"a":["tenant_id"]}}}}`, secureTenant)),
		string(toolJSON(`{"type":"object","properties":{"o":{"contentSchema":{"properties":{"tenant_id":{}}}}}}`, secureTenant)),
		string(toolJSON(`{"type":"object","properties":{"p":{"$ref":"#/properties/q"},"q":{"type":"string"}}}`, "")),
		string(toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"type":"string"}},"allOf":[{"required":["tenant_id"]}]}`)),
	} {
		f.Add(raw)
	}
	type verdict struct {
		Rule             Rule
		Reason           string
		Cost             int64
		Params, Required []string
		Headers          []HeaderBinding
		Warnings         []string
	}
	analyse := func(raw string, shortcut bool) *verdict {
		leafShortcut, expansion.LeafShortcut, expansion.RefOnlyShortcut = shortcut, shortcut, shortcut
		defer func() { leafShortcut, expansion.LeafShortcut, expansion.RefOnlyShortcut = true, true, true }()
		expansion.ResetMemo() // each side analyses afresh
		tool, err := ParseTool(json.RawMessage(raw))
		if err != nil {
			return nil
		}
		v := &verdict{Cost: tool.ValidationCost(), Params: tool.SecureParams, Required: tool.SecureRequired, Headers: tool.SecureHeaders, Warnings: tool.Warnings}
		var ex *ExclusionError
		if errors.As(Validate(tool), &ex) {
			v.Rule, v.Reason = ex.Rule, ex.Reason
			if ex.Rule == RuleExpansion {
				v.Reason = ""
			}
		}
		return v
	}
	f.Fuzz(func(t *testing.T, raw string) {
		full, short := analyse(raw, false), analyse(raw, true)
		if diff := cmp.Diff(full, short); diff != "" {
			t.Fatalf("%s: the shortcut changed the verdict (-full +shortcut):\n%s", raw, diff)
		}
	})
}
