package secureparams

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
		realisticToolText(),
	}
	for _, doc := range docs {
		if !json.Valid([]byte(doc)) {
			t.Fatalf("test document is not valid JSON: %s", doc)
		}
		want, wantHash, err := canonicalHash([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeValid([]byte(strings.TrimSpace(doc)))
		if err != nil {
			t.Fatalf("decodeValid(%s): %v", doc, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("decodeValid(%s) (-encoding/json +fast):\n%s", doc, diff)
		}
		gotHash, err := canonicalHashValid([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if gotHash != wantHash {
			t.Errorf("canonical hash of %s differs from encoding/json's", doc)
		}
	}
	deep := strings.Repeat("[", maxFastDepth+10) + strings.Repeat("]", maxFastDepth+10)
	_, wantHash, _ := canonicalHash([]byte(deep))
	if got, err := canonicalHashValid([]byte(deep)); err != nil || got != wantHash {
		t.Errorf("deep document: hash %q, %v; want %q", got, err, wantHash)
	}
	if _, err := decodeValid([]byte(deep)); err != nil {
		t.Errorf("deep document: %v", err)
	}
}

func realisticToolText() string { return string(realisticTool) }
