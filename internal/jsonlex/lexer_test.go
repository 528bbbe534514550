package jsonlex

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func tokenSeeds() []string {
	return []string{
		`{}`, `[]`, `"x"`, `1.50`, `true`, `null`, `{"b":1,"a":2}`, `{"a":1,"a":2}`,
		`{"z":{"y":[1,2,{"x":"<&>"}],"a":null},"m":"é\u00e9\n\t\"\\/","k":1e10}`,
		`{"dup":{"a":1},"x":0,"dup":{"b":2}}`,
		`{"s":"\ud83d\ude00 \u2028 \u0001 \ud800","n":-0.0,"big":123456789012345678901234567890}`,
		` { "name" : "t" , "inputSchema" : { "type" : "object" } } `,
		"{\"a\":\"bad \xff utf8\"}", `{"":1,"a":{"":{"":[]}}}`, `{"b":1,"a":2,"b":3}`,
		`{"\u0061":1,"a":2}`, `[{"a":[]},{"a":{}}]`, `{"x":"\u007f\u0000"}`,
		`{"a" : "k" , "b":[ "v" , {"c" :1}] }`,
		`{"name":"t","description":"d","inputSchema":{"type":"object","properties":{"q":{"type":"string","enum":["a","b"]}},"required":["q"]},"secureInputSchema":{"type":"object","properties":{"token":{"type":"string"}}}}`,
		`["\\",{"\\\"":"]"}, "\\\\\"}"]`, `[{"a":"}]"}] `,
		`{"a":1`, `[1,]`, `{"a" 1}`, `tru`, ``, ` `,
	}
}

// FuzzTokens checks that for any valid document the lexer's tokens are
// encoding/json's, that SkipValue (which matches brackets without reading
// tokens) ends where the document's value does, and that ObjectMembers
// splits an object as decoding it into ordered members would.
func FuzzTokens(f *testing.F) {
	for _, s := range tokenSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return // the lexer is only ever given validated documents
		}
		checkTokens(t, doc)
		checkSkip(t, doc)
		checkMembers(t, doc)
	})
}

// checkSkip compares where SkipValue ends with the end of the document's
// one value.
func checkSkip(t *testing.T, doc string) {
	t.Helper()
	lx := New([]byte(doc))
	lx.SkipValue()
	if want := len(strings.TrimRight(doc, " \t\r\n")); lx.Pos() != want {
		t.Fatalf("%q: SkipValue ends at %d, the value at %d", doc, lx.Pos(), want)
	}
}

// checkTokens compares the lexer's token stream with json.Decoder's.
func checkTokens(t *testing.T, doc string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	lx := New([]byte(doc))
	for {
		kind, raw := lx.Next()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if kind != End {
				t.Fatalf("%q: lexer has more tokens (%d %q)", doc, kind, raw)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", doc, err)
		}
		ok := false
		switch x := tok.(type) {
		case json.Delim:
			ok = map[json.Delim]Kind{'{': ObjectStart, '}': ObjectEnd, '[': ArrayStart, ']': ArrayEnd}[x] == kind
		case string:
			ok = (kind == Key || kind == String) && Unquote(raw) == x && lx.Plain() == PlainString(raw)
		case json.Number:
			ok = kind == Scalar && string(raw) == string(x)
		case bool:
			ok = kind == Scalar && string(raw) == map[bool]string{true: "true", false: "false"}[x]
		case nil:
			ok = kind == Scalar && string(raw) == "null"
		}
		if !ok {
			t.Fatalf("%q: lexer token %d %q, encoding/json %#v", doc, kind, raw, tok)
		}
	}
}

// checkMembers compares ObjectMembers with encoding/json reading the
// object's members one by one, in order, each value raw.
func checkMembers(t *testing.T, doc string) {
	t.Helper()
	trimmed := strings.TrimSpace(doc)
	if !strings.HasPrefix(trimmed, "{") {
		return
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("%q: encoding/json: %v", doc, err)
	}
	var want []Member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: encoding/json: %v", doc, err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatalf("%q: encoding/json: %v", doc, err)
		}
		want = append(want, Member{Key: tok.(string), Value: value})
	}
	if diff := cmp.Diff(want, ObjectMembers([]byte(doc))); diff != "" {
		t.Fatalf("ObjectMembers(%q) (-encoding/json +jsonlex):\n%s", doc, diff)
	}
}

func TestObjectMembers(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want []Member
	}{
		{"empty", `{}`, nil},
		{"spaces around", " \n{ \"a\" : 1 }\t", []Member{{"a", json.RawMessage(`1`)}}},
		{"order and repeats kept", `{"b":1,"a":[1,{"x":2}],"b":"s"}`,
			[]Member{{"b", json.RawMessage(`1`)}, {"a", json.RawMessage(`[1,{"x":2}]`)}, {"b", json.RawMessage(`"s"`)}}},
		{"key decoded, value raw", `{"\u0074ype":"\u006fbject"}`, []Member{{"type", json.RawMessage(`"\u006fbject"`)}}},
		{"nested keys not members", `{"p":{"type":"x"},"q":null}`,
			[]Member{{"p", json.RawMessage(`{"type":"x"}`)}, {"q", json.RawMessage(`null`)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ObjectMembers([]byte(tc.obj))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ObjectMembers(%s) (-want +got):\n%s", tc.obj, diff)
			}
			for _, m := range got {
				if cap(m.Value) != len(m.Value) {
					t.Errorf("member %q: value has spare capacity %d, appending would overwrite the document", m.Key, cap(m.Value)-len(m.Value))
				}
			}
		})
	}
}

// The lexer is allocation-free: reading a document's tokens and splitting
// it costs only the members slice (and keys that need decoding).
func TestLexerDoesNotAllocate(t *testing.T) {
	doc := []byte(tokenSeeds()[8])
	allocs := testing.AllocsPerRun(100, func() {
		lx := New(doc)
		for kind, _ := lx.Next(); kind != End; kind, _ = lx.Next() {
		}
		lx = New(doc)
		lx.Next()
		lx.ValueStart()
		lx.SkipValue()
	})
	if allocs != 0 {
		t.Errorf("lexing allocates %v times per run, want 0", allocs)
	}
}

// Invalid input is never handed to the lexer, but a string cut after a
// backslash must end the tokens rather than panic.
func TestTruncatedEscapeDoesNotPanic(t *testing.T) {
	for _, in := range []string{`"\`, `{"a\`, `{"a":"b\`, `["\\\`} {
		l := New([]byte(in))
		for i := 0; i < 10; i++ {
			if k, _ := l.Next(); k == End {
				break
			}
		}
		_ = ObjectMembers([]byte(in))
	}
}

// stringEndByCount is the lexer's former stringEnd, the reference for
// stringScan: the first quote after start with an even run of backslashes
// before it (counted back to start+1), found with bytes.IndexByte.
func stringEndByCount(data []byte, start int) int {
	i := start + 1
	for {
		j := bytes.IndexByte(data[i:], '"')
		if j < 0 {
			return len(data)
		}
		i += j
		k := i
		for k > start+1 && data[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 {
			return i
		}
	}
}

// FuzzStringScan checks that stringScan ends every string, of any input
// (invalid ones too: unterminated, a trailing backslash, stray bytes),
// where stringEndByCount does, from every quote in it, and that a string
// it ends at a quote is plain exactly when PlainString says so.
func FuzzStringScan(f *testing.F) {
	for _, s := range tokenSeeds() {
		f.Add(s)
	}
	for _, s := range []string{`"`, `"\`, `"\\"`, `"a\\\"b"`, `"\\\\"`, `"12345678\"9"`, `"1234567"`, `"12345678"`,
		"\"\xc3\xa9abcdefgh\"", "\"abcdefg\x80\"", `"abcdefgh\`, `"\u00e9"`, `"x\"`, `x"y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		data := []byte(doc)
		for start := range data {
			if data[start] != '"' {
				continue
			}
			end, plain := stringScan(data, start)
			if want := stringEndByCount(data, start); end != want {
				t.Fatalf("%q from %d: stringScan ends at %d, the count at %d", doc, start, end, want)
			}
			if closed := end-start >= 2 && data[end-1] == '"'; closed && plain != PlainString(data[start:end]) {
				t.Fatalf("%q from %d: plain %v, PlainString %v", doc, start, plain, !plain)
			} else if !closed && plain {
				t.Fatalf("%q from %d: an unterminated string is plain", doc, start)
			}
		}
	})
}
