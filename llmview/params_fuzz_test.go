package llmview

import (
	"bytes"
	"encoding/json"
	"testing"
)

// referenceParameters is Parameters as first written: the whole root
// decoded with encoding/json, every decision taken on the map.
func referenceParameters(inputSchema json.RawMessage) json.RawMessage {
	empty := json.RawMessage(`{"type":"object","properties":{}}`)
	trimmed := bytes.TrimSpace(inputSchema)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return empty
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &root); err != nil {
		return empty
	}
	changed := false
	if _, ok := root["type"]; !ok {
		root["type"] = json.RawMessage(`"object"`)
		changed = true
	}
	if string(root["type"]) == `"object"` {
		if p, ok := root["properties"]; !ok || string(bytes.TrimSpace(p)) == "null" {
			root["properties"] = json.RawMessage(`{}`)
			changed = true
		}
	}
	if r, ok := root["required"]; ok && string(bytes.TrimSpace(r)) == "null" {
		delete(root, "required")
		changed = true
	}
	if !changed {
		return trimmed
	}
	out, err := json.Marshal(root)
	if err != nil {
		return empty
	}
	return out
}

// FuzzParameters: for any inputSchema, Parameters answers as the
// encoding/json reading does and gives a JSON object; for a valid schema,
// ParametersOfValid (which skips the validation) answers the same.
func FuzzParameters(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"$defs":{"x":{}}}`,
		`{"type":"object"}`, `{"type":"object","properties":null}`, `{"type":"object","properties":{},"required":null}`,
		`{"properties":{"a":{}}}`, `null`, `"str"`, `{}`, `  {"type" : "object" , "properties" : { } }  `,
		`{"type":"object","properties":{},"properties":null}`, `{"type":"object","properties":null,"properties":{}}`,
		`{"typ\u0065":"object","properties":{}}`, `{"type":"object","propertie\u0073":null}`,
		`{"type":["object","null"]}`, `{"type":"string"}`, `{"type":`, `{"a":1}x`, ``, "{\"d\":\"\xff\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		got := Parameters(json.RawMessage(schema))
		if want := referenceParameters(json.RawMessage(schema)); !bytes.Equal(got, want) {
			t.Fatalf("Parameters(%q) = %s, reference %s", schema, got, want)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Fatalf("Parameters(%q) = %s, not a JSON object", schema, got)
		}
		if json.Valid([]byte(schema)) {
			if valid := ParametersOfValid(json.RawMessage(schema)); !bytes.Equal(valid, got) {
				t.Fatalf("ParametersOfValid(%q) = %s, Parameters %s", schema, valid, got)
			}
		}
	})
}
