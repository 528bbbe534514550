package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/google/go-cmp/cmp"
)

// secureTenant is the secure schema most shapes below are checked against.
const secureTenant = `{"type":"object","properties":{"tenant_id":{"type":"string"}},"required":["tenant_id"]}`

func toolJSON(input, secure string) json.RawMessage {
	if secure == "" {
		return json.RawMessage(fmt.Sprintf(`{"name":"t","inputSchema":%s}`, input))
	}
	return json.RawMessage(fmt.Sprintf(`{"name":"t","inputSchema":%s,"secureInputSchema":%s}`, input, secure))
}

// nestedProperties builds {"type":"object","properties":{"a":{...}}} n deep.
func nestedProperties(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n)
}

// refChain builds a $defs chain D0 -> D1 -> ... -> Dn-1 reached from the root.
func refChain(n int) string {
	var defs []string
	for i := 0; i < n-1; i++ {
		defs = append(defs, fmt.Sprintf(`"D%d":{"$ref":"#/$defs/D%d"}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"D%d":{"properties":{"q":{}}}`, n-1))
	return `{"type":"object","$ref":"#/$defs/D0","$defs":{` + strings.Join(defs, ",") + `}}`
}

func manyProperties(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{}`, i)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

func TestValidateShapes(t *testing.T) {
	tests := []struct {
		name   string
		raw    json.RawMessage
		rule   Rule   // "" means accepted
		reason string // substring of the reason, when set
		warn   string // substring of a warning, when set
	}{
		// Overlap through every place inputSchema can name a property.
		{name: "anyOf", raw: toolJSON(`{"type":"object","anyOf":[{"properties":{"q":{}}},{"properties":{"tenant_id":{}}}]}`, secureTenant), rule: RuleOverlap, reason: "/anyOf/1/properties/tenant_id"},
		{name: "oneOf required", raw: toolJSON(`{"type":"object","oneOf":[{"required":["tenant_id"]}]}`, secureTenant), rule: RuleOverlap},
		{name: "nested allOf in $defs behind $ref", raw: toolJSON(`{"$ref":"#/$defs/A","$defs":{"A":{"allOf":[{"allOf":[{"properties":{"tenant_id":{}}}]}]}}}`, secureTenant), rule: RuleOverlap},
		{name: "unreferenced definitions", raw: toolJSON(`{"type":"object","definitions":{"A":{"properties":{"tenant_id":{}}}}}`, secureTenant), rule: RuleOverlap},
		{name: "if", raw: toolJSON(`{"type":"object","if":{"properties":{"tenant_id":{"const":"x"}}}}`, secureTenant), rule: RuleOverlap},
		{name: "then", raw: toolJSON(`{"type":"object","if":{"required":["q"]},"then":{"properties":{"tenant_id":{}}}}`, secureTenant), rule: RuleOverlap, reason: "/then/"},
		{name: "else", raw: toolJSON(`{"type":"object","if":{"required":["q"]},"else":{"required":["tenant_id"]}}`, secureTenant), rule: RuleOverlap, reason: "/else/"},
		{name: "not", raw: toolJSON(`{"type":"object","not":{"required":["tenant_id"]}}`, secureTenant), rule: RuleOverlap},
		{name: "dependentSchemas value", raw: toolJSON(`{"type":"object","dependentSchemas":{"q":{"properties":{"tenant_id":{}}}}}`, secureTenant), rule: RuleOverlap},
		{name: "dependentSchemas key", raw: toolJSON(`{"type":"object","dependentSchemas":{"tenant_id":{}}}`, secureTenant), rule: RuleOverlap},
		{name: "dependentRequired value", raw: toolJSON(`{"type":"object","dependentRequired":{"q":["tenant_id"]}}`, secureTenant), rule: RuleOverlap},
		{name: "dependentRequired key", raw: toolJSON(`{"type":"object","dependentRequired":{"tenant_id":["q"]}}`, secureTenant), rule: RuleOverlap},
		{name: "draft-07 dependencies", raw: toolJSON(`{"type":"object","dependencies":{"q":["tenant_id"]}}`, secureTenant), rule: RuleOverlap},
		{name: "nested property", raw: toolJSON(`{"type":"object","properties":{"filter":{"type":"object","properties":{"tenant_id":{}}}}}`, secureTenant), rule: RuleOverlap, reason: "/properties/filter/properties/tenant_id"},
		{name: "array items", raw: toolJSON(`{"type":"object","properties":{"rows":{"type":"array","items":{"properties":{"tenant_id":{}}}}}}`, secureTenant), rule: RuleOverlap},
		{name: "prefixItems", raw: toolJSON(`{"type":"object","properties":{"rows":{"prefixItems":[{},{"required":["tenant_id"]}]}}}`, secureTenant), rule: RuleOverlap},
		{name: "draft-07 items array", raw: toolJSON(`{"type":"object","properties":{"rows":{"items":[{},{"required":["tenant_id"]}]}}}`, secureTenant), rule: RuleOverlap, reason: "/items/1/required/0"},
		{name: "contains", raw: toolJSON(`{"type":"object","properties":{"rows":{"contains":{"properties":{"tenant_id":{}}}}}}`, secureTenant), rule: RuleOverlap},
		{name: "unevaluatedProperties", raw: toolJSON(`{"type":"object","unevaluatedProperties":{"properties":{"tenant_id":{}}}}`, secureTenant), rule: RuleOverlap},
		{name: "additionalProperties schema", raw: toolJSON(`{"type":"object","additionalProperties":{"properties":{"tenant_id":{}}}}`, secureTenant), rule: RuleOverlap},
		{name: "ref into custom keyword with pointer escapes", raw: toolJSON(`{"$ref":"#/x-hidden/a~1b~0c","x-hidden":{"a/b~c":{"properties":{"tenant_id":{}}}}}`, secureTenant), rule: RuleOverlap, reason: "/x-hidden/a~1b~0c/properties/tenant_id"},
		{name: "ref percent-encoded", raw: toolJSON(`{"$ref":"#/x-hidden/a%20b","x-hidden":{"a b":{"required":["tenant_id"]}}}`, secureTenant), rule: RuleOverlap},
		{name: "ref to root", raw: toolJSON(`{"type":"object","properties":{"child":{"$ref":"#"}},"required":["q"]}`, secureTenant)},
		{name: "ref by anchor", raw: toolJSON(`{"$ref":"#args","x-hidden":{"$anchor":"args","properties":{"tenant_id":{}}}}`, secureTenant), rule: RuleOverlap},
		{name: "ref into array element", raw: toolJSON(`{"$ref":"#/x-list/1","x-list":[{},{"required":["tenant_id"]}]}`, secureTenant), rule: RuleOverlap},
		{name: "pattern matches", raw: toolJSON(`{"type":"object","patternProperties":{"_id$":{}}}`, secureTenant), rule: RuleOverlap},
		{name: "pattern case-insensitive flag", raw: toolJSON(`{"type":"object","patternProperties":{"(?i)^TENANT":{}}}`, secureTenant), rule: RuleOverlap},
		{name: "nested pattern", raw: toolJSON(`{"type":"object","properties":{"f":{"patternProperties":{"tenant":{}}}}}`, secureTenant), rule: RuleOverlap},
		{name: "secure pattern admits input name", raw: toolJSON(`{"type":"object","properties":{"x_region":{}}}`, `{"type":"object","properties":{"tenant_id":{}},"patternProperties":{"^x_":{"type":"string"}}}`), rule: RuleOverlap},

		// Shapes that do not overlap.
		{name: "pattern does not match", raw: toolJSON(`{"type":"object","patternProperties":{"^x_":{}}}`, secureTenant)},
		{name: "propertyNames is no overlap", raw: toolJSON(`{"type":"object","propertyNames":{"enum":["q","tenant_id"],"properties":{"tenant_id":{}}}}`, secureTenant)},
		{name: "additionalProperties true", raw: toolJSON(`{"type":"object","additionalProperties":true}`, secureTenant)},
		{name: "secure name only as a value", raw: toolJSON(`{"type":"object","properties":{"field":{"enum":["tenant_id"],"default":"tenant_id","description":"tenant_id"}}}`, secureTenant)},
		{name: "similar but distinct names", raw: toolJSON(`{"type":"object","properties":{"tenant":{},"tenant_ids":{},"tenant_id_hint":{}}}`, secureTenant)},
		{name: "boolean subschemas", raw: toolJSON(`{"type":"object","properties":{"q":true,"r":false},"additionalProperties":false}`, secureTenant)},

		// References that cannot be resolved safely.
		{name: "external ref absolute", raw: toolJSON(`{"type":"object","properties":{"q":{"$ref":"https://example.invalid/s.json"}}}`, secureTenant), rule: RuleExternalRef},
		{name: "external ref relative", raw: toolJSON(`{"type":"object","properties":{"q":{"$ref":"defs.json#/q"}}}`, secureTenant), rule: RuleExternalRef},
		{name: "external ref empty", raw: toolJSON(`{"type":"object","properties":{"q":{"$ref":""}}}`, secureTenant), rule: RuleExternalRef},
		{name: "external ref in secure schema", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"$ref":"http://127.0.0.1:9/x.json"}}}`), rule: RuleExternalRef},
		{name: "external ref without secure schema", raw: toolJSON(`{"type":"object","properties":{"q":{"$ref":"http://127.0.0.1:9/x.json"}}}`, ""), rule: RuleExternalRef},
		{name: "dynamicRef", raw: toolJSON(`{"type":"object","properties":{"q":{"$dynamicRef":"#meta"}}}`, secureTenant), rule: RuleDynamicRef},
		{name: "recursiveRef", raw: toolJSON(`{"type":"object","properties":{"q":{"$recursiveRef":"#"}}}`, secureTenant), rule: RuleDynamicRef},
		{name: "dynamicRef in secure schema", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"tenant_id":{"$dynamicRef":"#x"}}}`), rule: RuleDynamicRef},
		{name: "local ref to nothing", raw: toolJSON(`{"type":"object","$ref":"#/$defs/Missing"}`, secureTenant), rule: RuleUnresolvedRef},
		{name: "local ref to unknown anchor", raw: toolJSON(`{"type":"object","$ref":"#nowhere"}`, secureTenant), rule: RuleUnresolvedRef},
		{name: "local ref with bad index", raw: toolJSON(`{"$ref":"#/x-list/01","x-list":[{},{}]}`, secureTenant), rule: RuleUnresolvedRef},
		{name: "embedded $id with $ref", raw: toolJSON(`{"type":"object","$defs":{"A":{"$id":"https://example.invalid/a","$ref":"#/$defs/B","$defs":{"B":{}}}}}`, secureTenant), rule: RuleUnresolvedRef},
		{name: "embedded $id without $ref", raw: toolJSON(`{"type":"object","$defs":{"A":{"$id":"https://example.invalid/a"}}}`, secureTenant)},
		{name: "root $id with local ref", raw: toolJSON(`{"$id":"https://example.invalid/root","type":"object","$ref":"#/$defs/A","$defs":{"A":{"properties":{"q":{}}}}}`, secureTenant)},
		{name: "duplicate anchor", raw: toolJSON(`{"type":"object","$defs":{"A":{"$anchor":"x"},"B":{"$anchor":"x"}}}`, secureTenant), rule: RuleMalformed},

		// In-place $ref loops are undefined (validators reject every
		// instance): excluded. Recursion through properties is fine.
		{name: "ref cycle", raw: toolJSON(`{"type":"object","$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A","properties":{"q":{}}}}}`, secureTenant), rule: RuleLimits, reason: "loop"},
		{name: "self ref cycle", raw: toolJSON(`{"type":"object","$ref":"#"}`, secureTenant), rule: RuleLimits, reason: "loop"},
		{name: "pure ref loop", raw: toolJSON(`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, ""), rule: RuleLimits, reason: "loop"},
		{name: "ref cycle hiding overlap", raw: toolJSON(`{"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A","allOf":[{"required":["tenant_id"]}]}}}`, secureTenant), rule: RuleLimits},
		{name: "recursion through properties", raw: toolJSON(`{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"child":{"$ref":"#/$defs/node"},"q":{}}}}}`, secureTenant)},
		{name: "deep properties", raw: toolJSON(nestedProperties(MaxSchemaDepth+1), secureTenant), rule: RuleLimits},
		{name: "deep properties within limit", raw: toolJSON(nestedProperties(MaxSchemaDepth-2), secureTenant)},
		{name: "deep not chain", raw: toolJSON(strings.Repeat(`{"not":`, maxJSONDepth+1)+`{}`+strings.Repeat(`}`, maxJSONDepth+1), secureTenant), rule: RuleLimits},
		{name: "long ref chain", raw: toolJSON(refChain(MaxSchemaDepth+2), secureTenant), rule: RuleLimits, reason: "levels deep"},
		{name: "short ref chain", raw: toolJSON(refChain(10), secureTenant)},
		{name: "huge node count", raw: toolJSON(manyProperties(MaxSchemaNodes), secureTenant), rule: RuleLimits},
		{name: "huge node count without secure schema", raw: toolJSON(manyProperties(MaxSchemaNodes), ""), rule: RuleLimits},
		{name: "node budget shared by both schemas", raw: toolJSON(manyProperties(MaxSchemaNodes/2), manyProperties(MaxSchemaNodes/2)), rule: RuleLimits},
		{name: "uncompilable pattern", raw: toolJSON(`{"type":"object","patternProperties":{"(?=tenant)":{}}}`, secureTenant), rule: RulePattern},
		{name: "uncompilable pattern without secure schema", raw: toolJSON(`{"type":"object","patternProperties":{"(?=x)":{}}}`, "")},

		// Secure schema shape.
		{name: "secure type list of object", raw: toolJSON(`{"type":"object"}`, `{"type":["object"],"properties":{"a":{}}}`)},
		{name: "secure type list with null", raw: toolJSON(`{"type":"object"}`, `{"type":["object","null"]}`), rule: RuleSecureRoot},
		{name: "secure type wrong case", raw: toolJSON(`{"type":"object"}`, `{"type":"Object"}`), rule: RuleSecureRoot},
		{name: "secure type empty list", raw: toolJSON(`{"type":"object"}`, `{"type":[]}`), rule: RuleSecureRoot},
		{name: "secure schema string", raw: toolJSON(`{"type":"object"}`, `"object"`), rule: RuleSecureRoot},
		{name: "secure schema false", raw: toolJSON(`{"type":"object"}`, `false`), rule: RuleSecureRoot},
		{name: "secure properties not an object", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":["a"]}`), rule: RuleMalformed},
		{name: "secure required not names", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{}},"required":[1]}`), rule: RuleMalformed},
		{name: "secure property only in allOf", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{}},"allOf":[{"properties":{"extra":{}}}]}`), rule: RuleSecureUndeclared, reason: `"extra"`},
		{name: "secure required only in allOf", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{}},"allOf":[{"required":["b"]}]}`), rule: RuleSecureUndeclared},
		{name: "secure required behind ref", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{}},"$ref":"#/$defs/R","$defs":{"R":{"required":["b"]}}}`), rule: RuleSecureUndeclared},
		{name: "secure nested object is not top-level", raw: toolJSON(`{"type":"object","properties":{"host":{}}}`, `{"type":"object","properties":{"conn":{"type":"object","properties":{"host":{"type":"string"}}}}}`)},
		{name: "secure schema not compilable", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"strng"}}}`), rule: RuleInvalidSecureSchema},
		{name: "secure schema negative minLength", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{"minLength":-1}}}`), rule: RuleInvalidSecureSchema},
		{name: "secure schema remote metaschema", raw: toolJSON(`{"type":"object"}`, `{"$schema":"https://example.invalid/meta","type":"object"}`), rule: RuleInvalidSecureSchema},
		// SEP-3221: a secureInputSchema is draft 2020-12; another draft is refused.
		{name: "secure schema draft-07", raw: toolJSON(`{"type":"object"}`, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{}}}`), rule: RuleInvalidSecureSchema},

		// Malformed definitions.
		{name: "inputSchema null", raw: toolJSON(`null`, secureTenant), rule: RuleMalformed},
		{name: "inputSchema boolean", raw: toolJSON(`true`, ""), rule: RuleMalformed},
		{name: "inputSchema array", raw: toolJSON(`[]`, ""), rule: RuleMalformed},
		{name: "inputSchema properties not object", raw: toolJSON(`{"type":"object","properties":5}`, secureTenant), rule: RuleMalformed},
		{name: "inputSchema non-schema subschema", raw: toolJSON(`{"type":"object","properties":{"q":5}}`, secureTenant), rule: RuleMalformed},
		{name: "duplicate key in inputSchema", raw: toolJSON(`{"type":"object","properties":{"q":{}},"properties":{"tenant_id":{}}}`, secureTenant), rule: RuleMalformed, reason: "repeats the key"},
		{name: "duplicate key reports where", raw: toolJSON(`{"type":"object","properties":{"q":{"type":"string","type":"integer"}}}`, secureTenant), rule: RuleMalformed, reason: `"type" in the object at /inputSchema/properties/q`},
		{name: "duplicate key in secure schema", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{}},"properties":{"b":{}}}`), rule: RuleMalformed},
		{name: "duplicate tool name key", raw: json.RawMessage(`{"name":"t","name":"u","inputSchema":{"type":"object"}}`), rule: RuleMalformed},
		{name: "duplicate key in annotations", raw: json.RawMessage(`{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"readOnlyHint":false}}`), rule: RuleMalformed},
		{name: "no inputSchema", raw: json.RawMessage(`{"name":"t"}`), warn: "no inputSchema"},

		// x-mcp-header on secure properties.
		{name: "header on integer", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"shard":{"type":"integer","x-mcp-header":"Shard"}}}`)},
		{name: "header on boolean", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}`)},
		{name: "header on string or integer", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":["string","integer"],"x-mcp-header":"R"}}}`)},
		{name: "header on nullable string", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":["string","null"],"x-mcp-header":"R"}}}`), rule: RuleHeader},
		{name: "header on object", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"object","x-mcp-header":"R"}}}`), rule: RuleHeader},
		{name: "header on array", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"array","x-mcp-header":"R"}}}`), rule: RuleHeader},
		{name: "header without type", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"x-mcp-header":"R"}}}`), rule: RuleHeader},
		{name: "header empty", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":""}}}`), rule: RuleHeader},
		{name: "header not a string", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":5}}}`), rule: RuleHeader},
		{name: "header non-ASCII", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Régión"}}}`), rule: RuleHeader},
		{name: "header with colon", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"A:B"}}}`), rule: RuleHeader},
		{name: "header tchar punctuation", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"A!#$%&'*+-.^_|~1"}}}`)},
		{name: "header duplicate within secure", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Zone"},"b":{"type":"string","x-mcp-header":"ZONE"}}}`), rule: RuleHeader},
		{name: "header duplicate with nested input header", raw: toolJSON(`{"type":"object","properties":{"o":{"type":"object","properties":{"z":{"type":"string","x-mcp-header":"zone"}}}}}`, `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Zone"}}}`), rule: RuleHeader},
		{name: "header distinct from input header", raw: toolJSON(`{"type":"object","properties":{"z":{"type":"string","x-mcp-header":"Zone"}}}`, `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"}}}`)},
		{name: "header on nested secure property", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"conn":{"type":"object","properties":{"host":{"type":"string","x-mcp-header":"Host"}}}}}`), rule: RuleHeader, reason: "/properties/conn/properties/host"},
		{name: "header in secure allOf", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"a":{"x-mcp-header":"A"}}}]}`), rule: RuleHeader},
		{name: "invalid header in inputSchema", raw: toolJSON(`{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`, ""), rule: RuleHeader},
		{name: "header on api key warns", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"apiKey":{"type":"string","x-mcp-header":"Api"}}}`), warn: `"apiKey" looks like a credential`},
		{name: "header named like auth warns", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"X-Auth"}}}`), warn: "Mcp-Param-X-Auth"},
		{name: "header on password warns", raw: toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"db_password":{"type":"string","x-mcp-header":"Db"}}}`), warn: "looks like a credential"},

		// Case and separator variants are allowed but flagged.
		{name: "separator variant warns", raw: toolJSON(`{"type":"object","properties":{"Tenant-Id":{}}}`, secureTenant), warn: `"Tenant-Id" differs from secure parameter "tenant_id"`},
		{name: "nested variant warns", raw: toolJSON(`{"type":"object","properties":{"o":{"properties":{"TENANTID":{}}}}}`, secureTenant), warn: `"TENANTID"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := ParseTool(tc.raw)
			if err != nil {
				t.Fatalf("ParseTool: %v", err)
			}
			err = Validate(tool)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("want accepted, got %v", err)
				}
			} else {
				var ex *ExclusionError
				if !errors.As(err, &ex) {
					t.Fatalf("want exclusion by %q, got %v", tc.rule, err)
				}
				if ex.Rule != tc.rule {
					t.Fatalf("excluded by %q (%s), want %q", ex.Rule, ex.Reason, tc.rule)
				}
				if !strings.Contains(ex.Reason, tc.reason) {
					t.Fatalf("reason %q does not mention %q", ex.Reason, tc.reason)
				}
				if strings.ContainsAny(ex.Reason, "\n\r") {
					t.Fatalf("reason spans lines: %q", ex.Reason)
				}
			}
			if tc.warn != "" && !containsSubstring(tool.Warnings, tc.warn) {
				t.Fatalf("warnings %q lack %q", tool.Warnings, tc.warn)
			}
			if tc.warn == "" && tc.rule == "" && len(tool.Warnings) != 0 {
				t.Fatalf("unexpected warnings %q", tool.Warnings)
			}
		})
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestHeaderDoesNotWarnForOrdinaryNames(t *testing.T) {
	for _, name := range []string{"region", "monkey", "tenant_id", "keyspace", "passage", "author_id"} {
		if guard.LooksSecret(name) {
			t.Errorf("guard.LooksSecret(%q) = true", name)
		}
	}
	for _, name := range []string{"session_token", "apiKey", "api-key", "X-Auth", "Authorization", "client_secret", "PASSWORD", "privateKey", "db_pwd", "Bearer"} {
		if !guard.LooksSecret(name) {
			t.Errorf("guard.LooksSecret(%q) = false", name)
		}
	}
}

func TestSecureRequired(t *testing.T) {
	tests := []struct {
		name   string
		secure string
		want   []string
	}{
		{"root", `{"type":"object","properties":{"b":{},"a":{}},"required":["b","a"]}`, []string{"a", "b"}},
		{"allOf adds", `{"type":"object","properties":{"a":{},"b":{}},"required":["a"],"allOf":[{"required":["b"]}]}`, []string{"a", "b"}},
		{"ref adds", `{"type":"object","properties":{"a":{},"b":{}},"$ref":"#/$defs/R","$defs":{"R":{"required":["b"]}}}`, []string{"b"}},
		{"anyOf is conditional", `{"type":"object","properties":{"a":{},"b":{}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`, nil},
		{"if/then is conditional", `{"type":"object","properties":{"a":{},"b":{}},"if":{"required":["a"]},"then":{"required":["b"]}}`, nil},
		{"none", `{"type":"object","properties":{"a":{}}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, err := ParseTool(toolJSON(`{"type":"object"}`, tc.secure))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(tool); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tool.SecureRequired); diff != "" {
				t.Fatalf("SecureRequired (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseToolErrors(t *testing.T) {
	for _, raw := range []string{``, `   `, `null`, `[]`, `"tool"`, `42`, `{}`, `{"name":5}`, `{"name":null}`, `{"name":"t"`, `{"name":"t"} {}`, `{"description":"no name"}`} {
		t.Run(raw, func(t *testing.T) {
			tool, err := ParseTool(json.RawMessage(raw))
			if !errors.Is(err, ErrMalformedTool) {
				t.Fatalf("want ErrMalformedTool, got %v (tool %+v)", err, tool)
			}
		})
	}
}

func TestParseToolKeepsDefinition(t *testing.T) {
	raw := json.RawMessage(`{ "name" : "execute_sql", "title":"Run SQL", "description":"Runs SQL.",
		"inputSchema" : { "type": "object",  "properties": {"query": {"type":"string"}} },
		"secureInputSchema": {"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"instance":{"type":"string"}},"required":["region","instance"]},
		"annotations": {"readOnlyHint": true, "riskLevel": "high", "x-vendor": {"a": 1}} }`)
	tool, err := ParseTool(raw)
	if err != nil {
		t.Fatal(err)
	}
	if string(tool.Raw) != string(raw) {
		t.Errorf("Raw changed:\n%s", tool.Raw)
	}
	if got, want := string(tool.InputSchema), `{ "type": "object",  "properties": {"query": {"type":"string"}} }`; got != want {
		t.Errorf("InputSchema = %s, want exactly %s", got, want)
	}
	if tool.InputSchemaDefaulted {
		t.Error("InputSchemaDefaulted set for a sent inputSchema")
	}
	if got, want := string(tool.Annotations), `{"readOnlyHint": true, "riskLevel": "high", "x-vendor": {"a": 1}}`; got != want {
		t.Errorf("Annotations = %s", got)
	}
	got := struct {
		Name, Title, Description string
		Has                      bool
		Params, Required         []string
		Headers                  []HeaderBinding
	}{tool.Name, tool.Title, tool.Description, tool.HasSecureSchema, tool.SecureParams, tool.SecureRequired, tool.SecureHeaders}
	want := struct {
		Name, Title, Description string
		Has                      bool
		Params, Required         []string
		Headers                  []HeaderBinding
	}{"execute_sql", "Run SQL", "Runs SQL.", true, []string{"instance", "region"}, []string{"instance", "region"}, []HeaderBinding{{"region", "Mcp-Param-Region"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed fields (-want +got):\n%s", diff)
	}
	// The caller's buffer may be reused; the Tool must not alias it.
	raw[3] = 'X'
	if tool.Raw[3] == 'X' {
		t.Error("Raw aliases the caller's buffer")
	}
}

func TestParseToolDefaultsAndOddFields(t *testing.T) {
	tool, err := ParseTool(json.RawMessage(`{"name":"t","title":5,"description":["x"],"secureInputSchema":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(tool.InputSchema) != `{"type":"object"}` || !tool.InputSchemaDefaulted {
		t.Errorf("default inputSchema not recorded: %s %v", tool.InputSchema, tool.InputSchemaDefaulted)
	}
	if !tool.HasSecureSchema || string(tool.SecureInputSchema) != "null" {
		t.Errorf("secureInputSchema null must be present: has=%v %s", tool.HasSecureSchema, tool.SecureInputSchema)
	}
	if tool.Title != "" || tool.Description != "" || len(tool.Warnings) != 3 {
		t.Errorf("odd fields: title=%q description=%q warnings=%q", tool.Title, tool.Description, tool.Warnings)
	}
	var ex *ExclusionError
	if err := Validate(tool); !errors.As(err, &ex) || ex.Rule != RuleSecureRoot {
		t.Errorf("null secureInputSchema: got %v", err)
	}

	plain, err := ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if plain.HasSecureSchema || plain.SecureInputSchema != nil || plain.Annotations != nil {
		t.Errorf("absent keys must stay absent: %+v", plain)
	}
}

func TestDefHash(t *testing.T) {
	hash := func(raw string) string {
		t.Helper()
		tool, err := ParseTool(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(tool.DefHash()) != 64 || strings.Trim(tool.DefHash(), "0123456789abcdef") != "" {
			t.Fatalf("DefHash %q is not SHA-256 hex", tool.DefHash())
		}
		return tool.DefHash()
	}
	base := hash(`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":1}}`)
	same := []string{
		`{"annotations":{"x":1},"inputSchema":{"properties":{"b":{},"a":{"type":"string"}},"type":"object"},"name":"t"}`,
		"{\n  \"name\": \"t\",\n  \"inputSchema\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}, \"b\": {}}},\n  \"annotations\": {\"x\": 1}\n}",
	}
	for _, raw := range same {
		if got := hash(raw); got != base {
			t.Errorf("reordered/reformatted definition hashed differently: %s", raw)
		}
	}
	different := []string{
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":2}}`,
		`{"name":"u","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":1}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":1},"secureInputSchema":{"type":"object"}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":1.0}}`,
		`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{}}},"annotations":{"x":[1]}}`,
	}
	for _, raw := range different {
		if got := hash(raw); got == base {
			t.Errorf("changed definition kept the hash: %s", raw)
		}
	}
	// Escaping differences in strings are the same text.
	if hash(`{"name":"a<b"}`) != hash(`{"name":"a\u003cb"}`) {
		t.Error("equivalent string escapes hashed differently")
	}
}

func TestValidateIsCachedAndConcurrent(t *testing.T) {
	tool, err := ParseTool(toolJSON(`{"type":"object","properties":{"Tenant_ID":{}}}`, secureTenant))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Validate(tool); err != nil {
				t.Error(err)
			}
			if _, err := tool.ValueSchema(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(tool.Warnings) != 1 {
		t.Fatalf("warnings added more than once: %q", tool.Warnings)
	}
	first, _ := tool.ValueSchema()
	second, _ := tool.ValueSchema()
	if first == nil || first != second {
		t.Fatal("ValueSchema is not cached")
	}
}

func TestValidateToolLiteral(t *testing.T) {
	if err := Validate(nil); err == nil {
		t.Fatal("nil tool accepted")
	}
	// A Tool built without ParseTool is analysed on first Validate.
	tool := &Tool{Name: "lit", InputSchema: json.RawMessage(`{"type":"object","properties":{"tenant_id":{}}}`), SecureInputSchema: json.RawMessage(secureTenant), HasSecureSchema: true}
	var ex *ExclusionError
	if err := Validate(tool); !errors.As(err, &ex) || ex.Rule != RuleOverlap || ex.Tool != "lit" {
		t.Fatalf("got %v", err)
	}
	if got := ex.Error(); !strings.Contains(got, `tool "lit" excluded: `) {
		t.Fatalf("Error() = %q", got)
	}
}

// DefHash is computed on first use, from any goroutine, and exists for a
// definition that never parsed too (a stable identity, never a panic).
func TestDefHashLazyAndTotal(t *testing.T) {
	tool, err := ParseTool(json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, 8)
	var wg sync.WaitGroup
	for i := range hashes {
		wg.Go(func() { hashes[i] = tool.DefHash() })
	}
	wg.Wait()
	for _, h := range hashes {
		if h != hashes[0] || len(h) != 64 {
			t.Fatalf("concurrent DefHash calls disagree: %q", hashes)
		}
	}
	broken := &Tool{Name: "#3", Raw: json.RawMessage(`{"name": "x", "inputSchema": {`)}
	other := &Tool{Name: "#4", Raw: json.RawMessage(`{"name": "y", "inputSchema": {`)}
	if h := broken.DefHash(); len(h) != 64 || h != broken.DefHash() || h == other.DefHash() {
		t.Errorf("malformed definitions: hashes %q and %q", h, other.DefHash())
	}
}
