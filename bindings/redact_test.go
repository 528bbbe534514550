package bindings

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// canary has characters that JSON escapes (quote, backslash, <, &) so the
// escaped spellings are exercised.
const canary = `cAnary"<&>\z9`

func TestRedactorShortValuesIgnored(t *testing.T) {
	r := NewRedactor()
	r.Add("eu")
	r.Add("abc")
	r.Add("")
	if got := r.Redact("Europe eu abc"); got != "Europe eu abc" {
		t.Fatalf("short values mangled output: %q", got)
	}
	if r.Len() != 0 {
		t.Fatalf("Len = %d, want 0", r.Len())
	}
	r.Add("prod")
	if got := r.Redact("a prod b"); got != "a [REDACTED] b" {
		t.Fatalf("4-byte value not masked: %q", got)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		in     string
		want   string
	}{
		{"none registered", nil, "tok-1234", "tok-1234"},
		{"no match", []string{"tok-1234"}, "hello", "hello"},
		{"one", []string{"tok-1234"}, "a tok-1234 b", "a [REDACTED] b"},
		{"repeated", []string{"tok-1234"}, "tok-1234tok-1234", "[REDACTED]"},
		{"two values", []string{"tok-1234", "pw-5678"}, "pw-5678 and tok-1234", "[REDACTED] and [REDACTED]"},
		{"overlapping values merge", []string{"abcdef", "defghi"}, "xabcdefghix", "x[REDACTED]x"},
		{"nested values", []string{"secret-long", "secret"}, "a secret-long b secret", "a [REDACTED] b [REDACTED]"},
		{"overlapping occurrences", []string{"abab"}, "xababab", "x[REDACTED]"},
		{"json escaped form", []string{canary}, `{"k":"cAnary\"<&>\\z9"}`, `{"k":"[REDACTED]"}`},
		{"html escaped form", []string{canary}, `{"k":"cAnary\"\u003c\u0026\u003e\\z9"}`, `{"k":"[REDACTED]"}`},
		{"newline escaped", []string{"line1\nline2"}, `"line1\nline2"` + "\nline1\nline2", `"[REDACTED]"` + "\n[REDACTED]"},
		{"unicode", []string{"pässwörd"}, "x pässwörd y", "x [REDACTED] y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRedactor()
			for _, v := range tt.values {
				r.Add(v)
			}
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact = %q, want %q", got, tt.want)
			}
			in := []byte(tt.in)
			if got := r.RedactBytes(in); string(got) != tt.want {
				t.Errorf("RedactBytes = %q, want %q", got, tt.want)
			}
			if string(in) != tt.in {
				t.Errorf("RedactBytes modified its input")
			}
			if got := r.ContainsSecret(tt.in); got != (tt.want != tt.in) {
				t.Errorf("ContainsSecret = %v", got)
			}
		})
	}
}

func TestRedactNilRedactor(t *testing.T) {
	var r *Redactor
	r.Add("tok-1234")
	if r.Redact("tok-1234") != "tok-1234" || r.ContainsSecret("tok-1234") || r.Len() != 0 {
		t.Fatal("nil Redactor did something")
	}
}

// referenceRedact is an obviously-correct (slow) Redact: mark every byte
// covered by any occurrence of any spelling, then collapse marked runs.
func referenceRedact(values []string, s string) string {
	covered := make([]bool, len(s))
	for _, v := range values {
		if len(v) < MinRedactLen {
			continue
		}
		for _, p := range spellings(v) {
			for i := 0; i+len(p) <= len(s); i++ {
				if s[i:i+len(p)] == p {
					for j := i; j < i+len(p); j++ {
						covered[j] = true
					}
				}
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !covered[i] {
			b.WriteByte(s[i])
			continue
		}
		b.WriteString(RedactedText)
		for i+1 < len(s) && covered[i+1] {
			i++
		}
	}
	return b.String()
}

// TestRedactMatchesReference checks both search strategies (per-pattern
// search and the prefilter used for many values) against the reference on
// random text with planted values, including overlapping ones.
func TestRedactMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcd\"\\<\n "
	randStr := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for _, count := range []int{1, 3, 30} {
		t.Run(fmt.Sprint(count, " values"), func(t *testing.T) {
			r := NewRedactor()
			var values []string
			for range count {
				v := randStr(4 + rng.IntN(6))
				values = append(values, v)
				r.Add(v)
			}
			base := *r.state.Load()
			for _, strategy := range []string{"index", "prefilter"} {
				st := base
				st.filter = nil
				if strategy == "prefilter" {
					st.filter = newPrefilter(st.patterns)
				}
				r.state.Store(&st)
				checkAgainstReference(t, rng, r, values, randStr)
			}
		})
	}
}

func checkAgainstReference(t *testing.T, rng *rand.Rand, r *Redactor, values []string, randStr func(int) string) {
	t.Helper()
	for range 300 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(randStr(rng.IntN(12)))
			b.WriteString(values[rng.IntN(len(values))])
		}
		s := b.String()
		got, want := r.Redact(s), referenceRedact(values, s)
		if !needsUnescape(s) {
			if got != want {
				t.Fatalf("Redact(%q)\n got %q\nwant %q", s, got, want)
			}
			continue
		}
		// Unescaping may reveal more (a value spelled with escapes, or
		// one across an escaped backslash): at least the reference's
		// spellings are masked.
		for _, v := range values {
			for _, p := range spellings(v) {
				if strings.Contains(got, p) {
					t.Fatalf("Redact(%q) = %q still holds %q", s, got, p)
				}
			}
		}
	}
}

func TestRedactJSON(t *testing.T) {
	r := NewRedactor()
	r.Add(canary)
	r.Add("98765432")
	r.Add("Abcd1234")
	r.Add("key/sl/ash-9")
	tests := []struct {
		name string
		in   string
		want string // "" means: returned unchanged
	}{
		{"untouched", `{"a":"b","n":1}`, ""},
		{"string value", `{"token":"Bearer Abcd1234"}`, `{"token":"Bearer [REDACTED]"}`},
		{"unicode-escaped", `{"token":"\u0041bcd\u00312\u00334"}`, `{"token":"[REDACTED]"}`},
		{"canary escaped", `["x` + jsonInner(canary) + `y"]`, `["x[REDACTED]y"]`},
		{"key", `{"Abcd1234":1}`, `{"[REDACTED]":1}`},
		{"escaped slash", `{"p":"key\/sl\/ash-9"}`, `{"p":"[REDACTED]"}`},
		{"escaped quote kept elsewhere", `{"q":"say \"hi\"","t":"Abcd1234"}`, `{"q":"say \"hi\"","t":"[REDACTED]"}`},
		{"harmless escapes only", `{"q":"say \"hi\"\n"}`, ""},
		{"number", `{"pin":98765432,"other":1.5e3}`, `{"pin":"[REDACTED]","other":1.5e3}`},
		{"nested", `{"content":[{"type":"text","text":"your key is Abcd1234."}]}`, `{"content":[{"type":"text","text":"your key is [REDACTED]."}]}`},
		{"whitespace kept", "{ \"a\" : \"Abcd1234\" }", "{ \"a\" : \"[REDACTED]\" }"},
		{"invalid json falls back", `{"a": Abcd1234`, `{"a": [REDACTED]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := json.RawMessage(tt.in)
			got := r.RedactJSON(in)
			want := tt.want
			if want == "" {
				want = tt.in
				if len(in) > 0 && &got[0] != &in[0] {
					t.Error("unchanged input was copied")
				}
			}
			if string(got) != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			if json.Valid(in) && !json.Valid(got) {
				t.Fatalf("output is not valid JSON: %s", got)
			}
		})
	}
}

func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestRedactError(t *testing.T) {
	r := NewRedactor()
	r.Add("tok-1234")
	base := errors.New("root")
	err := fmt.Errorf("call with tok-1234 failed: %w", base)
	got := r.RedactError(err)
	if got.Error() != "call with [REDACTED] failed: root" || !errors.Is(got, base) {
		t.Fatalf("got %v", got)
	}
	clean := errors.New("fine")
	if r.RedactError(clean) != clean || r.RedactError(nil) != nil {
		t.Fatal("clean errors must pass through unchanged")
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := NewRedactor()
	var wg sync.WaitGroup
	values := make([]string, 50)
	for i := range values {
		values[i] = fmt.Sprintf("secret-%03d", i)
	}
	for _, v := range values {
		wg.Go(func() { r.Add(v) })
		wg.Go(func() { _ = r.Redact("x secret-000 y " + v) })
	}
	wg.Wait()
	line := strings.Join(values, " ")
	if got := r.Redact(line); strings.Contains(got, "secret-") {
		t.Fatalf("some values missed: %q", got)
	}
	if r.Len() != len(values) {
		t.Fatalf("Len = %d", r.Len())
	}
	if !slices.Contains(spellings(canary), jsonInner(canary)) {
		t.Fatal("spellings lacks the JSON form")
	}
}

func TestUnquoteJSONMatchesStdlib(t *testing.T) {
	for _, lit := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u0041\u00e9\u4e2d"`,
		`"\ud83d\ude00 smile"`, `"\ud83d lone"`, `"\ude00 low"`, `"\ud83d\u0041"`, `"ünï \u003c"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		got, ok := unquoteJSON([]byte(lit))
		if !ok || got != want {
			t.Errorf("unquoteJSON(%s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
}
