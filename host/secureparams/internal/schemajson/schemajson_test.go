package schemajson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The lexer-based decoder and canonical hash must agree with the
// encoding/json implementations they replace on the listing path.
func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `"x"`, `1.50`, `true`, `null`,
		`{"b":1,"a":2}`,
		`{"a":1,"a":2}`,
		`{"z":{"y":[1,2,{"x":"<&>"}],"a":null},"m":"é\u00e9\n\t\"\\/","k":1e10}`,
		`{"dup":{"a":1},"x":0,"dup":{"b":2}}`,
		`{"s":"\ud83d\ude00 \u2028 \u0001","n":-0.0,"big":123456789012345678901234567890}`,
		` { "name" : "t" , "inputSchema" : { "type" : "object" } } `,
		"{\"a\":\"bad \xff utf8\"}",
		`{"":1,"a":{"":{"":[]}}}`,
		`{"b":1,"a":2,"b":3}`,
		realisticDoc,
	}
	for _, doc := range docs {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("test document is not valid JSON: %s", doc)
		}
		want, wantHash, err := CanonicalHash([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeValid([]byte(strings.TrimSpace(doc)))
		if err != nil {
			t.Fatalf("DecodeValid(%s): %v", doc, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DecodeValid(%s) (-encoding/json +fast):\n%s", doc, diff)
		}
		gotHash, err := CanonicalHashValid([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if gotHash != wantHash {
			t.Errorf("canonical hash of %s differs from encoding/json's", doc)
		}
	}
	deep := strings.Repeat("[", MaxFastDepth+10) + strings.Repeat("]", MaxFastDepth+10)
	_, wantHash, _ := CanonicalHash([]byte(deep))
	if got, err := CanonicalHashValid([]byte(deep)); err != nil || got != wantHash {
		t.Errorf("deep document: hash %q, %v; want %q", got, err, wantHash)
	}
	if _, err := DecodeValid([]byte(deep)); err != nil {
		t.Errorf("deep document: %v", err)
	}
}

// realisticDoc is a tool definition of the kind the listing path reads.
const realisticDoc = `{"name":"search_orders","title":"Search orders","description":"Search orders.\nPaginated.",
 "inputSchema":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":500},
 "range":{"$ref":"#/$defs/R"}},"required":["query"],"$defs":{"R":{"type":"object","properties":{"from":{"type":"string"}}}}},
 "secureInputSchema":{"type":"object","properties":{"tenant_id":{"type":"string","minLength":1}},"required":["tenant_id"]}}`

func fastJSONSeeds() []string {
	return []string{
		`{}`, `[]`, `"x"`, `1.50`, `true`, `null`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"z":{"y":[1,2,{"x":"<&>"}],"a":null},"m":"é\u00e9\n\t\"\\/","k":1e10}`,
		`{"dup":{"a":1},"x":0,"dup":{"b":2}}`,
		`{"s":"\ud83d\ude00 \u2028 \u0001 \ud800","n":-0.0,"big":123456789012345678901234567890}`,
		` { "name" : "t" , "inputSchema" : { "type" : "object" } } `,
		"{\"a\":\"bad \xff utf8\"}", `{"":1,"a":{"":{"":[]}}}`, `{"b":1,"a":2,"b":3}`,
		`{"\u0061":1,"a":2}`, `[{"a":[]},{"a":{}}]`, `{"x":"\u007f\u0000"}`,
		`{"a":1`, `[1,]`, `{"a" 1}`, `tru`, ``, ` `,
		realisticDoc,
	}
}

// FuzzFastJSON checks the lexer-based decoder and canonical hash against
// encoding/json: for any valid document the same value and the same hash;
// equal values (re-encoded by encoding/json) hash equal. (The lexer's own
// tokens are checked against encoding/json's in internal/jsonlex.)
func FuzzFastJSON(f *testing.F) {
	for _, s := range fastJSONSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return // the fast paths are only ever given validated documents
		}
		want, wantHash, err := CanonicalHash([]byte(doc))
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		got, err := DecodeValid([]byte(strings.TrimSpace(doc)))
		if err != nil {
			t.Fatalf("DecodeValid(%q): %v", doc, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("DecodeValid(%q) (-encoding/json +fast):\n%s", doc, diff)
		}
		gotHash, err := CanonicalHashValid([]byte(doc))
		if err != nil || gotHash != wantHash {
			t.Fatalf("CanonicalHashValid(%q) = %s, %v; encoding/json %s", doc, gotHash, err, wantHash)
		}
		again, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := CanonicalHashValid(again); err != nil || h != wantHash {
			t.Fatalf("%q and its re-encoding %s hash differently", doc, again)
		}
	})
}
