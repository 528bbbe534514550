package valueschema

import (
	"encoding/json"
	"testing"
)

// sureSeeds: schemas Sure answers for (realistic secure schemas) and ones
// it must leave to the compiler, each a way a schema can fail to compile.
var sureSeeds = []struct {
	schema string
	sure   bool
}{
	{`{"type": "object", "properties": {
   "tenant_id": {"type": "string", "description": "Tenant identifier supplied by the host application (cluster 3).", "minLength": 1},
   "region": {"type": "string", "enum": ["eu-west1", "us-east1", "us-west1"], "x-mcp-header": "Region"},
   "instance": {"type": "string", "pattern": "^[a-z][a-z0-9-]{2,62}$"}},
  "required": ["tenant_id", "region", "instance"], "additionalProperties": false}`, true},
	{`{"type":"object","properties":{"n":{"type":["integer","null"],"minimum":1,"maximum":5,"default":2}}}`, true},
	{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":3}},"title":"t","$comment":"c"}`, true},
	{`{"type":"object","properties":{"a":true,"b":false},"additionalProperties":{"type":"string","format":"no-such-format"}}`, true},
	{`true`, true},
	{`{}`, true},
	{`{"type":"object","properties":{"k":{"const":{"x":[1,2]},"examples":[1],"readOnly":true,"x-note":null}}}`, true},

	{`{"type":"objekt"}`, false},
	{`{"type":[]}`, false},
	{`{"type":["string","string"]}`, false},
	{`{"type":["string",1]}`, false},
	{`{"required":["a","a"]}`, false},
	{`{"required":"a"}`, false},
	{`{"properties":{"a":{"pattern":"("}}}`, false},
	{`{"properties":{"a":{"pattern":1}}}`, false},
	{`{"properties":{"a":{"minLength":-1}}}`, false},
	{`{"properties":{"a":{"minLength":1.5}}}`, false},
	{`{"properties":{"a":{"maxLength":99999999999999999999}}}`, false},
	{`{"properties":{"a":{"minimum":"1"}}}`, false},
	{`{"properties":{"a":{"enum":{}}}}`, false},
	{`{"properties":{"a":{"default":1e100000000}}}`, false},
	{`{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`, false},
	{`{"properties":{"a":{"$ref":"http://example.com/s.json"}}}`, false},
	{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, false},
	{`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, false},
	{`{"properties":"a"}`, false},
	{`{"properties":{"a":1}}`, false},
	{`{"additionalProperties":[]}`, false},
	{`{"title":1}`, false},
	{`{"deprecated":"yes"}`, false},
	{`{"x-mcp-header":{"a":1}}`, false},
	{`{"unknownKeyword":1}`, false},
	{`[]`, false},
	{`"a"`, false},
	{`1`, false},
}

func TestSureSeeds(t *testing.T) {
	for _, tc := range sureSeeds {
		if got := Sure(json.RawMessage(tc.schema)); got != tc.sure {
			t.Errorf("Sure(%s) = %v, want %v", tc.schema, got, tc.sure)
		}
		checkSure(t, []byte(tc.schema))
	}
}

// checkSure: a schema Sure answers for compiles, and Cache.Check gives
// Compile's verdict, before and after Get.
func checkSure(t *testing.T, schema []byte) {
	t.Helper()
	_, cerr := Compile(schema)
	if Sure(schema) && cerr != nil {
		t.Fatalf("Sure(%s) but Compile: %v", schema, cerr)
	}
	c := NewCache()
	// (The compiler's messages list a schema's problems in map order, so
	// only the verdict is compared.)
	if err := c.Check(schema); (err == nil) != (cerr == nil) {
		t.Fatalf("Check(%s) = %v, Compile = %v", schema, err, cerr)
	}
	s, err := c.Get(schema)
	if (err == nil) != (cerr == nil) || (err == nil) != (s != nil) {
		t.Fatalf("Get(%s) after Check = %v, Compile = %v", schema, err, cerr)
	}
	if err := c.Check(schema); (err == nil) != (cerr == nil) {
		t.Fatalf("Check(%s) after Get = %v, Compile = %v", schema, err, cerr)
	}
}

// FuzzSureCompiles holds Sure to Compile: every valid JSON document Sure
// answers for compiles, so that a catalog build that skips the compile for
// it gives every tool the verdict the compile would.
func FuzzSureCompiles(f *testing.F) {
	for _, tc := range sureSeeds {
		f.Add(tc.schema)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if !json.Valid([]byte(schema)) {
			return
		}
		checkSure(t, []byte(schema))
	})
}

// TestCheckDoesNotCompileWhatIsSure: the saving itself.
func TestCheckDoesNotCompileWhatIsSure(t *testing.T) {
	c := NewCache()
	schema := json.RawMessage(sureSeeds[0].schema)
	if err := c.Check(schema); err != nil {
		t.Fatal(err)
	}
	if e := c.entries[string(schema)]; e.schema != nil || e.err != nil {
		t.Fatal("Check compiled a schema Sure answers for")
	}
	if s, err := c.Get(schema); s == nil || err != nil {
		t.Fatalf("Get = %v, %v", s, err)
	}
}
