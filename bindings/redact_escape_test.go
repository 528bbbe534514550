package bindings

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// TestRedactEscapedSpellings: a value written by another JSON encoder than
// Go's (Python's ensure_ascii, PHP's escaped slashes, upper-case hex, any
// mix), or nested in JSON inside a JSON string, is masked in plain text
// too (a tool's text result is often a JSON document).
func TestRedactEscapedSpellings(t *testing.T) {
	r := NewRedactor()
	r.Add("pässwörd-9")
	r.Add("https://tok/en-77")
	r.Add("Abcd1234")
	r.Add("emoji-😀-key")
	tests := []struct {
		name, in, want string
	}{
		{"python non-ascii", `{"pw": "p\u00e4ssw\u00f6rd-9"}`, `{"pw": "[REDACTED]"}`},
		{"upper-case hex", `p\u00E4ssw\u00F6rd-9!`, `[REDACTED]!`},
		{"php slashes", `{"u":"https:\/\/tok\/en-77"}`, `{"u":"[REDACTED]"}`},
		{"every character escaped", `x \u0041\u0062\u0063\u0064\u0031\u0032\u0033\u0034 y`, `x [REDACTED] y`},
		{"mixed", `A\u0062cd12\u00334`, `[REDACTED]`},
		{"surrogate pair", `"emoji-\ud83d\ude00-key"`, `"[REDACTED]"`},
		{"surrogate pair upper case", `emoji-\uD83D\uDE00-key`, `[REDACTED]`},
		{"nested json", `{"text":"{\"pw\": \"p\\u00e4ssw\\u00f6rd-9\"}"}`, `{"text":"{\"pw\": \"[REDACTED]\"}"}`},
		{"nested php", `"{\"u\":\"https:\\\/\\\/tok\\\/en-77\"}"`, `"{\"u\":\"[REDACTED]\"}"`},
		{"escaped backslash before a value", `C:\\dir\\Abcd1234`, `C:\\dir\\[REDACTED]`},
		{"escape-like text stays", `\u00e4 and \/ and \x`, ``},
		{"invalid escapes stay", `\u00g1 \ud83d lone Abcd`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := r.Redact(tt.in); got != want {
				t.Errorf("Redact(%s) = %s, want %s", tt.in, got, want)
			}
			if got := string(r.RedactBytes([]byte(tt.in))); got != want {
				t.Errorf("RedactBytes(%s) = %s, want %s", tt.in, got, want)
			}
			if got := r.ContainsSecret(tt.in); got != (want != tt.in) {
				t.Errorf("ContainsSecret(%s) = %v", tt.in, got)
			}
		})
	}
}

// spell writes value the way some JSON encoder could: each character
// literally (where JSON allows) or escaped, chosen by rng.
func spell(rng *rand.Rand, value string) string {
	var b strings.Builder
	for _, c := range value {
		hexCase := "%04x"
		if rng.IntN(2) == 0 {
			hexCase = "%04X"
		}
		short := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\n': `\n`, '\t': `\t`, '\r': `\r`, '\b': `\b`, '\f': `\f`}[c]
		mustEscape := c < 0x20 || c == '"' || c == '\\'
		switch k := rng.IntN(3); {
		case k == 0 && !mustEscape:
			b.WriteRune(c)
		case k == 1 && short != "":
			b.WriteString(short)
		default:
			if c > 0xFFFF {
				r1, r2 := utf16.EncodeRune(c)
				fmt.Fprintf(&b, `\u`+hexCase+`\u`+hexCase, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u`+hexCase, c)
			}
		}
	}
	return b.String()
}

// FuzzRedactSpellings: for any value and any JSON spelling of it, in
// plain text, in a JSON document, and in a JSON document nested in a
// JSON string, the redactor finds it and nothing of it is left.
func FuzzRedactSpellings(f *testing.F) {
	for _, seed := range []string{"pässwörd-9", "https://x/y", `q"uo\te`, "tab\there\nnl", "emoji-😀-key", "中文密码口令", "\x01\x1fctl", "Abcd1234"} {
		f.Add(seed, uint64(1))
		f.Add(seed, uint64(42))
	}
	f.Fuzz(func(t *testing.T, value string, seed uint64) {
		if len(value) < MinRedactLen || !utf8.ValidString(value) {
			return
		}
		r := NewRedactor()
		r.Add(value)
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		spelled := spell(rng, value)
		doc := `{"k":"x ` + spelled + ` y"}`
		nestedBytes, _ := json.Marshal(doc)
		nested := string(nestedBytes)
		for _, text := range []string{spelled, "text: " + spelled + ".", doc, nested} {
			if !r.ContainsSecret(text) {
				t.Fatalf("value %q spelled %s: ContainsSecret(%s) = false", value, spelled, text)
			}
			red := r.Redact(text)
			if !strings.Contains(red, RedactedText) {
				t.Fatalf("value %q: Redact(%s) = %s", value, text, red)
			}
			if left := unescapeAll(red); strings.Contains(left, value) {
				t.Fatalf("value %q: Redact(%s) = %s still spells it", value, text, red)
			}
		}
		for _, d := range []string{doc, nested} {
			got := r.RedactJSON(json.RawMessage(d))
			if !json.Valid(got) {
				t.Fatalf("RedactJSON(%s) = %s is not valid JSON", d, got)
			}
			var s string
			var m map[string]string
			if json.Unmarshal(got, &s) == nil {
				if json.Unmarshal([]byte(s), &m) != nil {
					// The redaction cut the inner document: nothing left to decode.
					m = map[string]string{"k": s}
				}
			} else if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("RedactJSON(%s) = %s: %v", d, got, err)
			}
			if strings.Contains(m["k"], value) {
				t.Fatalf("value %q: RedactJSON(%s) = %s still holds it", value, d, got)
			}
		}
	})
}

// unescapeAll unescapes text as deep as the redactor looks.
func unescapeAll(s string) string {
	all := s
	for range maxUnescapeDepth {
		s, _, _ = unescape(s, false)
		all += "\x00" + s
	}
	return all
}

func TestUnescapeMapsOffsets(t *testing.T) {
	in := `a\u00e4\/\ud83d\ude00\\n`
	got, starts, ends := unescape(in, true)
	if want := "aä/😀\\n"; got != want {
		t.Fatalf("unescape = %q, want %q", got, want)
	}
	if len(starts) != len(got) || len(ends) != len(got) {
		t.Fatalf("maps have %d/%d entries for %d bytes", len(starts), len(ends), len(got))
	}
	wantSeq := []string{"a", `\u00e4`, `\u00e4`, `\/`, `\ud83d\ude00`, `\ud83d\ude00`, `\ud83d\ude00`, `\ud83d\ude00`, `\\`, "n"}
	for i := range got {
		if seq := in[starts[i]:ends[i]]; seq != wantSeq[i] {
			t.Errorf("byte %d comes from %q, want %q", i, seq, wantSeq[i])
		}
	}
}

// TestRedactJSONNumbers: a numeric value is found in a number however the
// number is written, since a decoder re-encodes 9.8765432e7 as 98765432;
// without a numeric value registered, numbers are not looked at.
func TestRedactJSONNumbers(t *testing.T) {
	r := NewRedactor()
	r.Add("98765432")
	for _, in := range []string{`{"pin":98765432}`, `{"pin":9.8765432e7}`, `[98765432.0]`, `{"a":{"b":[1,9876543200e-2]}}`} {
		got := r.RedactJSON(json.RawMessage(in))
		if !json.Valid(got) || strings.Contains(string(got), "98765432") || !strings.Contains(string(got), RedactedText) {
			t.Errorf("RedactJSON(%s) = %s", in, got)
		}
	}
	if got := r.RedactJSON(json.RawMessage(`{"n":1.5e3}`)); string(got) != `{"n":1.5e3}` {
		t.Errorf("an unrelated number changed: %s", got)
	}
	words := NewRedactor()
	words.Add("secret-word")
	if words.MayMatchNumbers() || !r.MayMatchNumbers() {
		t.Error("MayMatchNumbers is wrong")
	}
}

// FuzzStreamRedactor: text holding a value in any JSON spelling, fed in
// random pieces, comes out as Redact of the whole text would have it.
func FuzzStreamRedactor(f *testing.F) {
	f.Add("pässwörd-9", uint64(1), "before ", " after")
	f.Add("tok/en/SLASH-1", uint64(7), `{"k":"`, `"}`)
	f.Add("emoji-😀-key", uint64(3), "", "")
	f.Fuzz(func(t *testing.T, value string, seed uint64, prefix, suffix string) {
		if len(value) < MinRedactLen || !utf8.ValidString(value) || !utf8.ValidString(prefix) || !utf8.ValidString(suffix) ||
			strings.Contains(prefix, `\`) || strings.Contains(suffix, `\`) {
			return
		}
		r := NewRedactor()
		r.Add(value)
		rng := rand.New(rand.NewPCG(seed, 99))
		text := prefix + spell(rng, value) + suffix
		sr := r.NewStream()
		var out strings.Builder
		for rest := text; rest != ""; {
			n := min(len(rest), 1+rng.IntN(8))
			out.WriteString(sr.Write(rest[:n]))
			rest = rest[n:]
		}
		out.WriteString(sr.Flush())
		if got := out.String(); strings.Contains(unescapeAll(got), value) {
			t.Fatalf("value %q in %q came out as %q", value, text, got)
		}
	})
}
