package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseOperation(t *testing.T) {
	tests := []struct {
		name  string
		words []string
		err   string
	}{
		{"none", nil, ""},
		{"args and schema", []string{"--args", `t={"a":1}`, "--schema-to", "echo=focal"}, ""},
		{"unknown option", []string{"--url"}, "unknown option"},
		{"missing value", []string{"--args"}, "needs TOOL=VALUE"},
		{"no tool", []string{"--args", `={}`}, "not TOOL=VALUE"},
		{"not JSON", []string{"--args", `t={`}, "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseOperation(tt.words)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("parseOperation(%q) = %v, want error %q", tt.words, err, tt.err)
			}
		})
	}
}

// The plan calls every active tool in the listing's order, with the
// scenario's arguments first, then --args, then the echoed schema, else {}.
func TestOperationPlan(t *testing.T) {
	listing := []byte(`{"servers":[{"name":"url","tools":[
		{"name":"focal","status":"active","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}},
		{"name":"echo","status":"active","inputSchema":{"type":"object"}},
		{"name":"from_context","status":"active","inputSchema":{}},
		{"name":"excluded","status":"excluded","inputSchema":{}},
		{"name":"plain","status":"active","inputSchema":{}}]}]}`)
	tools, err := parseListing(listing)
	if err != nil {
		t.Fatal(err)
	}
	op, err := parseOperation([]string{"--args", `focal={"name":"Ada"}`, "--args", `from_context={"ignored":true}`, "--schema-to", "echo=focal"})
	if err != nil {
		t.Fatal(err)
	}
	fromContext, err := contextToolCalls(`{"name":"s","toolCalls":[{"name":"from_context","arguments":{"verbose":null}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := op.plan(tools, fromContext)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"focal", `{"name":"Ada"}`},
		{"echo", `{"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}}`},
		{"from_context", `{"verbose":null}`},
		{"plain", `{}`},
	}
	if !slices.Equal(calls, want) {
		t.Errorf("plan = %q, want %q", calls, want)
	}
	for _, c := range calls {
		if !json.Valid([]byte(c[1])) {
			t.Errorf("%s: arguments %s are not JSON", c[0], c[1])
		}
	}

	bad, _ := parseOperation([]string{"--schema-to", "echo=missing"})
	if _, err := bad.plan(tools, nil); err == nil {
		t.Error("a --schema-to naming an unlisted tool was planned")
	}
	if _, err := contextToolCalls(`{`); err == nil {
		t.Error("a context that is not JSON was read")
	}
}
