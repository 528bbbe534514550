package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
)

// canary is a value that must never appear in an error.
const canary = "CANARY-s3cr3t-7f1e"

func mustCompile(t *testing.T, schema string) *ValueSchema {
	t.Helper()
	vs, err := CompileSecureSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("CompileSecureSchema: %v", err)
	}
	return vs
}

// assertNoCanary checks every rendering of err, including the chain.
func assertNoCanary(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, text := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(text, canary) || strings.Contains(text, "s3cr3t") {
				t.Fatalf("error leaks the value: %s", text)
			}
		}
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			assertNoCanary(t, e)
		}
	}
}

func TestValueValidationNeverLeaksValues(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		values  map[string]any
		param   string
		keyword string
	}{
		{"enum", `{"type":"object","properties":{"region":{"enum":["eu","us"]}}}`, map[string]any{"region": canary}, "region", `"enum"`},
		{"enum of the canary's neighbours", `{"type":"object","properties":{"region":{"enum":["CANARY-s3cr3t-7f1"]}}}`, map[string]any{"region": canary}, "region", `"enum"`},
		{"const", `{"type":"object","properties":{"region":{"const":"eu"}}}`, map[string]any{"region": canary}, "region", `"const"`},
		{"pattern", `{"type":"object","properties":{"region":{"pattern":"^[a-z]{2}$"}}}`, map[string]any{"region": canary}, "region", `"pattern"`},
		{"maxLength", `{"type":"object","properties":{"region":{"maxLength":3}}}`, map[string]any{"region": canary}, "region", `"maxLength"`},
		{"type", `{"type":"object","properties":{"port":{"type":"integer"}}}`, map[string]any{"port": canary}, "port", "type integer"},
		{"not", `{"type":"object","properties":{"region":{"not":{"const":"CANARY-s3cr3t-7f1e"}}}}`, map[string]any{"region": canary}, "region", `"not"`},
		{"oneOf", `{"type":"object","properties":{"region":{"oneOf":[{"const":"a"},{"const":"b"}]}}}`, map[string]any{"region": canary}, "region", `"const"`},
		{"ref", `{"type":"object","properties":{"region":{"$ref":"#/$defs/R"}},"$defs":{"R":{"enum":["eu"]}}}`, map[string]any{"region": canary}, "region", "/$defs/R/enum"},
		{"nested object value", `{"type":"object","properties":{"conn":{"type":"object","properties":{"host":{"const":"db"}},"additionalProperties":false}}}`, map[string]any{"conn": map[string]any{"host": canary, canary: 1}}, "conn", "conn"},
		{"nested required", `{"type":"object","properties":{"conn":{"type":"object","required":["host"]}}}`, map[string]any{"conn": map[string]any{"port": canary}}, "conn", `lacks required properties "host"`},
		{"array value", `{"type":"object","properties":{"hosts":{"type":"array","items":{"enum":["a"]},"uniqueItems":true}}}`, map[string]any{"hosts": []any{canary, canary}}, "hosts", "hosts"},
		{"number minimum", `{"type":"object","properties":{"n":{"minimum":10}}}`, map[string]any{"n": 7.25}, "n", `"minimum"`},
		{"root additionalProperties", `{"type":"object","properties":{"a":{}},"additionalProperties":false}`, map[string]any{"a": 1, "extra": canary}, "extra", "not allowed"},
		{"propertyNames", `{"type":"object","propertyNames":{"maxLength":3}}`, map[string]any{"toolong": canary}, "", "/propertyNames/maxLength"},
		{"false schema", `{"type":"object","properties":{"region":false}}`, map[string]any{"region": canary}, "region", `"false"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := mustCompile(t, tc.schema).Validate(tc.values)
			if err == nil {
				t.Fatal("invalid value accepted")
			}
			assertNoCanary(t, err)
			if strings.Contains(err.Error(), "7.25") {
				t.Fatalf("numeric value leaked: %v", err)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValueError, got %T %v", err, err)
			}
			if ve.Param != tc.param {
				t.Fatalf("Param = %q, want %q (%v)", ve.Param, tc.param, err)
			}
			if !strings.Contains(err.Error(), tc.keyword) {
				t.Fatalf("error %q does not name %q", err, tc.keyword)
			}
		})
	}
}

func TestValueValidation(t *testing.T) {
	vs := mustCompile(t, `{"type":"object","properties":{
		"region":{"type":"string","enum":["eu","us"]},
		"tenant_id":{"type":"string","minLength":1},
		"port":{"type":"integer","minimum":1},
		"email":{"type":"string","format":"email"},
		"dry":{"type":"boolean"}},
		"required":["region","tenant_id"],
		"dependentRequired":{"port":["dry"]}}`)
	tests := []struct {
		name   string
		values map[string]any
		params []string // failing parameters, in order; nil means valid
	}{
		{"valid", map[string]any{"region": "eu", "tenant_id": "t1"}, nil},
		{"valid with typed values", map[string]any{"region": "us", "tenant_id": "t", "port": int64(5432), "dry": true}, nil},
		{"integer from float64", map[string]any{"region": "us", "tenant_id": "t", "port": float64(80), "dry": false}, nil},
		{"integer from json.Number", map[string]any{"region": "us", "tenant_id": "t", "port": json.Number("8080"), "dry": false}, nil},
		{"formats are annotations only", map[string]any{"region": "eu", "tenant_id": "t", "email": "not an email"}, nil},
		{"one missing", map[string]any{"region": "eu"}, []string{"tenant_id"}},
		{"both missing", map[string]any{}, []string{"region", "tenant_id"}},
		{"nil map", nil, []string{"region", "tenant_id"}},
		{"dependent required", map[string]any{"region": "eu", "tenant_id": "t", "port": 1}, []string{"dry"}},
		{"several problems", map[string]any{"region": "xx", "tenant_id": "", "port": 0, "dry": true}, []string{"port", "region", "tenant_id"}},
		{"unencodable", map[string]any{"region": "eu", "tenant_id": "t", "dry": make(chan int)}, []string{"dry"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := vs.Validate(tc.values)
			if tc.params == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			var got []string
			var joined interface{ Unwrap() []error }
			if errors.As(err, &joined) {
				for _, e := range joined.Unwrap() {
					got = append(got, e.(*ValueError).Param)
				}
			} else {
				got = []string{err.(*ValueError).Param}
			}
			if diff := cmp.Diff(tc.params, got); diff != "" {
				t.Fatalf("failing params (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func TestCompileNeverFetches(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()

	schemas := map[string]string{
		"property $ref":     `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/a.json"}}}`,
		"$schema":           `{"$schema":"` + srv.URL + `/meta","type":"object"}`,
		"relative to $id":   `{"$id":"` + srv.URL + `/root.json","type":"object","properties":{"a":{"$ref":"other.json"}}}`,
		"$dynamicRef":       `{"type":"object","properties":{"a":{"$dynamicRef":"` + srv.URL + `/d.json#x"}}}`,
		"file URL":          `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
		"$ref in $defs":     `{"type":"object","$ref":"#/$defs/A","$defs":{"A":{"$ref":"` + srv.URL + `/b.json"}}}`,
		"$ref behind allOf": `{"type":"object","allOf":[{"$ref":"` + srv.URL + `/c.json"}]}`,
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			if _, err := CompileSecureSchema(json.RawMessage(schema)); err == nil {
				t.Fatal("schema with a remote reference compiled")
			}
			tool, err := ParseTool(toolJSON(`{"type":"object"}`, schema))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(tool); err == nil {
				t.Fatal("tool with a remote reference accepted")
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the schema server was contacted %d times", n)
	}
	// The server works: a fetch would have been counted.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatal("hit counter does not count")
	}
}

func TestSecureSchemaIsDraft2020(t *testing.T) {
	for name, tc := range map[string]struct {
		schema string
		ok     bool
	}{
		"no $schema":     {`{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		"2020-12":        {`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, true},
		"2020-12 with #": {`{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`, true},
		"draft-04":       {`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, false},
		"draft-07":       {`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, false},
		"2019-09":        {`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`, false},
		"not a string":   {`{"$schema":7,"type":"object"}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileSecureSchema(json.RawMessage(tc.schema))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			tool, perr := ParseTool(toolJSON(`{"type":"object"}`, tc.schema))
			if perr != nil {
				t.Fatal(perr)
			}
			if verr := Validate(tool); (verr == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", verr, tc.ok)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for name, schema := range map[string]string{
		"not JSON":        `{"type":`,
		"trailing data":   `{"type":"object"} {}`,
		"invalid keyword": `{"type":"object","properties":{"a":{"type":"strng"}}}`,
		"bad pattern":     `{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`,
		"unknown anchor":  `{"type":"object","$ref":"#nowhere"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := CompileSecureSchema(json.RawMessage(schema)); err == nil {
				t.Fatal("compiled")
			}
		})
	}
	if _, err := (&Tool{}).ValueSchema(); !errors.Is(err, ErrNoSecureSchema) {
		t.Fatalf("tool without secure schema: %v", err)
	}
}

func TestProperties(t *testing.T) {
	vs := mustCompile(t, `{"type":"object","properties":{"region":{"type":"string","enum":["eu"]},"port":{"type":"integer"}}}`)
	props := vs.Properties()
	want := map[string]string{"region": `{"type":"string","enum":["eu"]}`, "port": `{"type":"integer"}`}
	if len(props) != len(want) {
		t.Fatalf("got %d properties", len(props))
	}
	for name, raw := range want {
		if string(props[name]) != raw {
			t.Errorf("%s = %s, want %s", name, props[name], raw)
		}
	}
	props["region"][0] = 'X'
	delete(props, "port")
	again := vs.Properties()
	if string(again["region"]) != want["region"] || again["port"] == nil {
		t.Fatal("Properties returned shared state")
	}
	if got := mustCompile(t, `{"type":"object"}`).Properties(); len(got) != 0 {
		t.Fatalf("no properties: got %v", got)
	}
}

func TestCoerce(t *testing.T) {
	vs := mustCompile(t, `{"type":"object","properties":{
		"s":{"type":"string"},
		"untyped":{},
		"i":{"type":"integer"},
		"n":{"type":"number"},
		"b":{"type":"boolean"},
		"in":{"type":["integer","null"]},
		"si":{"type":["string","integer"]},
		"o":{"type":"object"},
		"a":{"type":"array"},
		"bs":true}}`)
	tests := []struct {
		param, value string
		want         any
		fail         bool
	}{
		{param: "s", value: "42", want: "42"},
		{param: "untyped", value: "true", want: "true"},
		{param: "bs", value: "x", want: "x"},
		{param: "si", value: "42", want: "42"},
		{param: "i", value: "42", want: int64(42)},
		{param: "i", value: "-7", want: int64(-7)},
		{param: "i", value: "4.0", fail: true},
		{param: "i", value: "99999999999999999999", fail: true},
		{param: "i", value: " 1", fail: true},
		{param: "n", value: "1.5", want: 1.5},
		{param: "n", value: "NaN", fail: true},
		{param: "n", value: "Inf", fail: true},
		{param: "b", value: "true", want: true},
		{param: "b", value: "FALSE", want: false},
		{param: "b", value: "1", fail: true},
		{param: "in", value: "3", want: int64(3)},
		{param: "in", value: "null", want: nil},
		{param: "o", value: `{"host":"db","port":5432}`, want: map[string]any{"host": "db", "port": json.Number("5432")}},
		{param: "o", value: `[1]`, fail: true},
		{param: "a", value: `["x"]`, want: []any{"x"}},
		{param: "a", value: `{}`, fail: true},
		{param: "missing", value: "x", fail: true},
	}
	for _, tc := range tests {
		t.Run(tc.param+"="+tc.value, func(t *testing.T) {
			got, err := vs.Coerce(tc.param, tc.value)
			if tc.fail {
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Param != tc.param {
					t.Fatalf("want *ValueError for %q, got %v (%v)", tc.param, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCoerceErrorsNeverLeakValues(t *testing.T) {
	vs := mustCompile(t, `{"type":"object","properties":{"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},"o":{"type":"object"}}}`)
	for _, param := range []string{"i", "n", "b", "o"} {
		_, err := vs.Coerce(param, canary)
		if err == nil {
			t.Fatalf("%s: canary coerced", param)
		}
		assertNoCanary(t, err)
	}
	_, err := vs.Coerce("o", `{"k":"`+canary+`"`)
	if err == nil {
		t.Fatal("truncated JSON coerced")
	}
	assertNoCanary(t, err)
}

func TestSelect(t *testing.T) {
	tool, err := ParseTool(toolJSON(`{"type":"object"}`, `{"type":"object","properties":{"region":{},"tenant_id":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{"region": "eu", "tenant_id": "t", "db_password": canary, "Region": "x"}
	got := Select(values, tool)
	if diff := cmp.Diff(map[string]any{"region": "eu", "tenant_id": "t"}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	got["region"] = "changed"
	if values["region"] != "eu" || len(values) != 4 {
		t.Fatal("Select changed its input")
	}
	if got := Select(map[string]any{"other": 1}, tool); got != nil {
		t.Fatalf("nothing declared: got %v", got)
	}
	if got := Select(values, nil); got != nil {
		t.Fatalf("nil tool: got %v", got)
	}
	plain, _ := ParseTool(toolJSON(`{"type":"object"}`, ""))
	if got := Select(values, plain); got != nil {
		t.Fatalf("tool without secure params: got %v", got)
	}
}

func TestParamHeaders(t *testing.T) {
	tool, err := ParseTool(toolJSON(`{"type":"object"}`, `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"shard":{"type":"integer","x-mcp-header":"Shard"},
		"dry":{"type":"boolean","x-mcp-header":"Dry"},
		"plain":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(tool); err != nil {
		t.Fatal(err)
	}
	unsafeText := " zürich\n"
	wantUnsafe, _ := mcp.EncodeHeaderValue(unsafeText)
	tests := []struct {
		name   string
		values map[string]any
		want   map[string]string
		fail   string
	}{
		{name: "all", values: map[string]any{"region": "us-west1", "shard": int64(3), "dry": true, "plain": "p"}, want: map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-Shard": "3", "Mcp-Param-Dry": "true"}},
		{name: "integral float", values: map[string]any{"shard": float64(12)}, want: map[string]string{"Mcp-Param-Shard": "12"}},
		{name: "json number", values: map[string]any{"shard": json.Number("12")}, want: map[string]string{"Mcp-Param-Shard": "12"}},
		{name: "unsafe text is Base64 wrapped", values: map[string]any{"region": unsafeText}, want: map[string]string{"Mcp-Param-Region": wantUnsafe}},
		{name: "absent and null", values: map[string]any{"region": nil}, want: nil},
		{name: "fractional", values: map[string]any{"shard": 1.5}, fail: "shard"},
		{name: "beyond safe integers", values: map[string]any{"shard": int64(1) << 60}, fail: "shard"},
		{name: "object", values: map[string]any{"region": map[string]any{"v": canary}}, fail: "region"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParamHeaders(tool, tc.values)
			if tc.fail != "" {
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Param != tc.fail {
					t.Fatalf("want *ValueError for %q, got %v", tc.fail, err)
				}
				assertNoCanary(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	if !strings.HasPrefix(wantUnsafe, "=?base64?") {
		t.Fatalf("test premise: %q should need Base64", unsafeText)
	}
}
