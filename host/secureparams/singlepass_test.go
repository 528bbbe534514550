package secureparams

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
	"github.com/agenthost/agenthost/llmview"
	"github.com/google/go-cmp/cmp"
)

// passVerdict is everything ParseTool and Validate give a caller.
type passVerdict struct {
	Verdict                                           memoVerdict
	Title, Description                                string
	InputSchema, SecureInputSchema, Annotations, Meta string
	Defaulted, HasSecure                              bool
	DefHash                                           string
	// Parameters are the model's, as the catalog computes them (from the
	// pass's root members when it read them).
	Parameters string
}

func passAnalyse(raw []byte) *passVerdict {
	tool, err := ParseTool(raw)
	if err != nil {
		return &passVerdict{Title: "parse error: " + err.Error()}
	}
	v := &passVerdict{
		Title: tool.Title, Description: tool.Description,
		InputSchema: string(tool.InputSchema), SecureInputSchema: string(tool.SecureInputSchema),
		Annotations: string(tool.Annotations), Meta: string(tool.Meta),
		Defaulted: tool.InputSchemaDefaulted, HasSecure: tool.HasSecureSchema, DefHash: tool.DefHash(),
		Parameters: string(llmview.ParametersOfValid(tool.InputSchema)),
	}
	if typ, props, required, ok := tool.InputRoot(); ok {
		v.Parameters = string(llmview.ParametersOfRoot(tool.InputSchema, typ, props, required))
	}
	v.Verdict = *memoAnalyse(raw)
	return v
}

// singlePassVerdicts analyses raw with and without the single pass, each
// time after a sibling tool with the same secureInputSchema (secure) filled
// the memo, as a catalog does, twice.
func singlePassVerdicts(raw []byte, secure string) (full, pass [2]*passVerdict) {
	defer func() { singlePass = true; secureMemo.reset() }()
	run := func(on bool) (out [2]*passVerdict) {
		singlePass = on
		secureMemo.reset()
		if secure != "" {
			memoAnalyse(toolJSON(`{"type":"object"}`, secure))
		}
		out[0], out[1] = passAnalyse(raw), passAnalyse(raw)
		return out
	}
	return run(false), run(true)
}

func checkSinglePass(t *testing.T, raw []byte, secure string) {
	t.Helper()
	full, pass := singlePassVerdicts(raw, secure)
	for i := range full {
		if diff := cmp.Diff(full[i], pass[i]); diff != "" {
			t.Fatalf("definition %s (secure schema %s): the single pass changed verdict %d (-full +pass):\n%s", raw, secure, i, diff)
		}
	}
}

// singlePassInputs are inputSchemas the pass answers for and ones it must
// leave to the full analysis: hostile, malformed, fan-out, anchors,
// references it cannot follow, numbers, limits, overlap and name variants.
func singlePassInputs() []string {
	return []string{
		`{"type":"object"}`, `{}`, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"type":"object","properties":{"from":{}}}}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/definitions/R"}},"definitions":{"R":true}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"$ref":"#/$defs/S"},"S":{}}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"properties":{"x":{"$ref":"#/$defs/R"}}}}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/Missing"}}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/R","properties":{"a":{}}}},"$defs":{"R":{}}}`,
		`{"type":"object","properties":{"r":{"$ref":"#/$defs/R","required":["tenant_id"]}},"$defs":{"R":{}}}`,
		`{"$defs":{"R":{"properties":{"deep":{"$ref":"#/$defs/S"}}},"S":{"type":"string"}},"properties":{"a":{"items":{"$ref":"#/$defs/R"}}}}`,
		`{"properties":{"a":{"contentSchema":{"$ref":"#/$defs/R"}}},"$defs":{"R":{}}}`,
		`{"properties":{"a":{"$ref":"https://example.com/s"}}}`, `{"properties":{"a":{"$ref":"#"}}}`,
		`{"properties":{"a":{"$ref":"#/$defs/a%20b"}},"$defs":{"a b":{}}}`, `{"properties":{"a":{"$ref":7}}}`,
		`{"properties":{"a":{"$dynamicRef":"#x"}}}`, `{"$id":"https://x/","properties":{"a":{"$id":"y"}}}`,
		`{"properties":{"a":{"$anchor":"x"},"b":{"$ref":"#x"}}}`,
		`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
		`{"properties":{"not":{"type":"string"}}}`, `{"properties":{"$ref":{"type":"string"}}}`,
		`{"default":{"$ref":"#/nowhere"}}`, `{"enum":[{"allOf":1}]}`,
		`{"properties":{"r":{"type":"string","x-mcp-header":"Region"}}}`, `{"properties":{"x-mcp-header":{}}}`,
		`{"properties":{"a":{"type":"string"},"a":{"type":"integer"}}}`, `{"type":"object","type":"object"}`,
		`{"properties":{"a":{"maximum":1e999999999}}}`, `{"enum":[123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890]}`,
		`{"properties":{"a":{"minimum":-0.5e-3}}}`,
		`{"properties":[]}`, `{"properties":{"a":1}}`, `{"properties":{"a":null}}`, `{"items":null}`, `{"items":"x"}`,
		`{"items":[{"type":"string"},true]}`, `{"required":"a"}`, `{"required":[1]}`,
		`{"dependentRequired":{"a":["b","tenant_id"]}}`, `{"dependentRequired":{"a":"b"}}`, `{"$defs":[]}`,
		`{"additionalProperties":{"properties":{"tenant_id":{}}}}`, `{"properties":{"tenantId":{}}}`,
		`{"properties":{"TENANT-ID":{}}}`, `{"required":["tenant_id"]}`,
		`[]`, `"x"`, `null`, `true`,
		nestedProperties(20), nestedProperties(33), nestedProperties(70),
		strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70),
		strings.Repeat(`{"x":`, 130) + `{}` + strings.Repeat(`}`, 130),
		manyNodes(MaxSchemaNodes/2 - 10), manyNodes(MaxSchemaNodes/2 + 10), manyNodes(MaxSchemaNodes - 40), manyNodes(MaxSchemaNodes + 5),
	}
}

var singlePassSecures = []string{
	"", secureTenant, headerSecure,
	`{"type":"object","properties":{"tenant_id":{}},"patternProperties":{"^q":{}}}`,
	`{"type":"object","properties":{"api_key":{"type":"string","x-mcp-header":"Api-Key"}}}`,
	`{"type":"string"}`, `null`,
}

// TestSinglePassKeepsVerdicts: for every shape the pass decides or
// declines, the verdict is the full analysis's.
func TestSinglePassKeepsVerdicts(t *testing.T) {
	for _, secure := range singlePassSecures {
		for _, input := range singlePassInputs() {
			checkSinglePass(t, toolJSON(input, secure), secure)
		}
	}
	for _, extra := range []string{`"title":7,`, `"description":null,`, `"annotations":{"a":1,"a":2},`, `"_meta":{"x":[1,{}]},`, `"title":"a","title":"b",`} {
		checkSinglePass(t, []byte(`{"name":"t",`+extra+`"inputSchema":{"type":"object"}}`), "")
	}
	checkSinglePass(t, []byte(`{"name":"t"}`), "")
	checkSinglePass(t, realisticTool, string(secureOf(t, realisticTool)))
	for _, fx := range readFixture(t, fixtureCopy).Tools {
		checkSinglePass(t, fx.Tool, string(secureOf(t, fx.Tool)))
	}
}

func secureOf(t *testing.T, raw []byte) json.RawMessage {
	for _, m := range ObjectMembers(bytes.TrimSpace(raw)) {
		if m.Key == "secureInputSchema" {
			return m.Value
		}
	}
	return nil
}

// TestSinglePassIsUsed: the realistic tools of a catalog are decided by
// the pass (their schemas never decoded: a quarter fewer allocations a
// parse at least), with the cost the full analysis measures.
func TestSinglePassIsUsed(t *testing.T) {
	defer func() { singlePass = true; secureMemo.reset() }()
	tests := []struct {
		name string
		raw  []byte
		cost int64
	}{
		{"realistic, $ref to a $defs entry", realisticTool, 2},
		{"no $ref", toolJSON(`{"type":"object","properties":{"q":{"type":"string"}}}`, secureTenant), 1},
		{"$ref of a property, no secure schema", toolJSON(`{"$defs":{"R":{}},"properties":{"a":{"$ref":"#/$defs/R"}}}`, ""), 2},
		{"$ref to a boolean", toolJSON(`{"$defs":{"R":true},"properties":{"a":{"$ref":"#/$defs/R"}}}`, ""), 1},
		{"$ref only inside $defs", toolJSON(`{"$defs":{"R":{"properties":{"a":{"$ref":"#/$defs/S"}}},"S":{}}}`, ""), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if facts := onepass.Scan(bytes.TrimSpace(tt.raw), passLimits); facts == nil || facts.Cost != tt.cost {
				t.Fatalf("pass facts %+v, want cost %d", facts, tt.cost)
			}
			if secure := secureOf(t, tt.raw); secure != nil {
				memoAnalyse(toolJSON(`{"type":"object"}`, string(secure)))
			}
			tool, err := ParseTool(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(tool); err != nil || tool.ValidationCost() != tt.cost {
				t.Fatalf("Validate: %v, cost %d", err, tool.ValidationCost())
			}
			parse := func() {
				if _, err := ParseTool(tt.raw); err != nil {
					t.Fatal(err)
				}
			}
			singlePass = false
			without := testing.AllocsPerRun(20, parse)
			singlePass = true
			with := testing.AllocsPerRun(20, parse)
			if with >= without*3/4 {
				t.Fatalf("with the pass %.0f allocations a parse, without %.0f: the pass was not used", with, without)
			}
		})
	}
}

// FuzzSinglePass: wherever the single pass decides a tool, every verdict
// (rule, reason, cost, names, required, headers, warnings, fields, hash)
// is the full analysis's, for random and hostile schemas and definitions.
func FuzzSinglePass(f *testing.F) {
	for i, input := range singlePassInputs() {
		if len(input) < 4096 {
			f.Add("", input, singlePassSecures[i%len(singlePassSecures)])
		}
	}
	f.Add(`"title":1,"_meta":{"a":[]},`, `{"properties":{"a":{"$ref":"#/$defs/R"}},"$defs":{"R":{}}}`, secureTenant)
	f.Fuzz(func(t *testing.T, extra, input, secure string) {
		raw := []byte(fmt.Sprintf(`{"name":"t",%s"inputSchema":%s}`, extra, input))
		if secure != "" {
			raw = []byte(fmt.Sprintf(`{"name":"t",%s"inputSchema":%s,"secureInputSchema":%s}`, extra, input, secure))
		}
		if !json.Valid(raw) {
			return
		}
		checkSinglePass(t, raw, secure)
	})
}
