package safeschema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

func TestNumberOK(t *testing.T) {
	tests := []struct {
		lit  string
		want bool
	}{
		{"0", true},
		{"-12.5", true},
		{"1e308", true},
		{"1E+1000", true},
		{"1e-1000", true},
		{"4.9e-324", true},
		{"1e0000000000010", true},
		{"0e-00", true},
		{"1e1001", false},
		{"1e-1001", false},
		{"1e100000000", false},
		{"-1E-100000000", false},
		{"1e99999999999999999999999", false},
		{strings.Repeat("9", MaxNumberLength), true},
		{strings.Repeat("9", MaxNumberLength+1), false},
		{"0." + strings.Repeat("0", MaxNumberLength) + "1", false},
	}
	for _, tc := range tests {
		if got := NumberOK(tc.lit); got != tc.want {
			t.Errorf("NumberOK(%.40q) = %t, want %t", tc.lit, got, tc.want)
		}
	}
}

func TestCheckNumbers(t *testing.T) {
	tests := []struct {
		doc    string
		values int
		at     string // "" means no error
	}{
		{`{"a":[1,2,{"b":"1e100000000"}]}`, 6, ""},
		{`{"a":[1,2,{"b~/c":1e100000000}]}`, 0, "/a/2/b~0~1c"},
		{`1e-100000000`, 0, "/"},
		{`[1.5, true, null]`, 4, ""},
	}
	for _, tc := range tests {
		n, err := CheckNumbers(decode(t, tc.doc))
		if tc.at == "" {
			if err != nil || n != tc.values {
				t.Errorf("CheckNumbers(%s) = %d, %v; want %d, nil", tc.doc, n, err, tc.values)
			}
			continue
		}
		var ne *NumberError
		if !errors.As(err, &ne) || !errors.Is(err, ErrNumber) || !strings.Contains(err.Error(), " "+tc.at+" ") {
			t.Errorf("CheckNumbers(%s) = %v, want a NumberError at %s", tc.doc, err, tc.at)
		}
		if strings.Contains(err.Error(), "100000000") {
			t.Errorf("the error quotes the number: %v", err)
		}
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   error // nil: compiles
	}{
		{"plain", `{"type":"object","properties":{"n":{"maximum":5}}}`, nil},
		{"remote ref", `{"$ref":"https://example.com/schema.json"}`, ErrRemoteSchema},
		{"relative ref", `{"$ref":"other.json"}`, ErrRemoteSchema},
		{"multipleOf beyond big.Rat", `{"multipleOf":1e-100000000}`, ErrNumber},
		{"minLength beyond big.Rat", `{"minLength":1e100000000}`, ErrNumber},
		{"maximum beyond big.Rat", `{"maximum":1e100000000}`, ErrNumber},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(decode(t, tc.schema), "mem:///s.json", jsonschema.Draft2020)
			if tc.want == nil {
				if err != nil || s == nil {
					t.Fatalf("Compile = %v", err)
				}
				return
			}
			// The library does not wrap its loader's error; it quotes it.
			if err == nil || (!errors.Is(err, tc.want) && !strings.Contains(err.Error(), tc.want.Error())) {
				t.Fatalf("Compile = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestValidateRecovers: the reported crashes, fed straight to the
// validator, come back as errors.
func TestValidateRecovers(t *testing.T) {
	for _, tc := range []struct{ schema, instance string }{
		{`{"maximum":5}`, `1e100000000`},
		{`{"minimum":5}`, `1e100000000`},
		{`{"exclusiveMaximum":5}`, `-1e100000000`},
		{`{"multipleOf":2}`, `1e100000000`},
		{`{"uniqueItems":true}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,1e100000000]`},
	} {
		s, err := Compile(decode(t, tc.schema), "mem:///s.json", nil)
		if err != nil {
			t.Fatal(err)
		}
		err = Validate(s, decode(t, tc.instance))
		if !errors.Is(err, ErrValidatorPanic) {
			t.Errorf("%s against %s: %v, want ErrValidatorPanic", tc.instance, tc.schema, err)
		}
	}
}

// FuzzValidate: no schema and instance make Compile or Validate panic, with
// or without CheckNumbers first; an instance CheckNumbers accepts never
// makes the validator fail internally.
func FuzzValidate(f *testing.F) {
	seeds := []struct{ schema, instance string }{
		{`{"type":"object","properties":{"n":{"maximum":5}}}`, `{"n":1e100000000}`},
		{`{"minimum":0}`, `1e100000000`},
		{`{"exclusiveMinimum":0}`, `-1e-100000000`},
		{`{"exclusiveMaximum":10}`, `1E+1000001`},
		{`{"multipleOf":2}`, `1e100000000`},
		{`{"multipleOf":1e-100000000}`, `1`},
		{`{"multipleOf":0.01}`, `1e1000`},
		{`{"maximum":1e100000000}`, `1`},
		{`{"minLength":1e100000000}`, `"a"`},
		{`{"uniqueItems":true}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,1e100000000]`},
		{`{"enum":[1e100000000]}`, `1e100000000`},
		{`{"const":1e100000000}`, `1e100000000`},
		{`{"type":"integer"}`, `1e100000000`},
		{`{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}],"$defs":{"a":{"maximum":1}}}`, `2`},
		{`{"$ref":"https://example.com/x.json"}`, `{}`},
		{`{"items":{"multipleOf":3}}`, `[3, 4.5, 9e999]`},
		{`{"items":{"multipleOf":3}}`, `[3, 4.5, 9e9999]`},
	}
	for _, s := range seeds {
		f.Add(s.schema, s.instance)
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		sdoc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
		if err != nil {
			return
		}
		idoc, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
		if err != nil {
			return
		}
		s, err := Compile(sdoc, "mem:///fuzz.json", jsonschema.Draft2020)
		if err != nil {
			return
		}
		_ = Validate(s, idoc) // must not panic, whatever the instance
		if _, err := CheckNumbers(idoc); err != nil {
			return
		}
		if err := Validate(s, idoc); errors.Is(err, ErrValidatorPanic) {
			t.Fatalf("validator failed on an instance CheckNumbers accepted: %v", err)
		}
		// Numbers re-encoded as the host sends them stay acceptable.
		if raw, err := json.Marshal(idoc); err == nil {
			if again, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw))); err == nil {
				if _, err := CheckNumbers(again); err != nil {
					t.Fatalf("re-encoded instance refused: %v", err)
				}
			}
		}
	})
}

func BenchmarkCheckNumbers(b *testing.B) {
	doc := decode(b, `{"query":"orders","limit":50,"filters":[{"field":"a","op":"eq","value":1.5,"meta":{"weight":3}},{"field":"b","op":"lt","value":2e10}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CheckNumbers(doc); err != nil {
			b.Fatal(err)
		}
	}
}
