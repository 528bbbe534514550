package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/agenthost/agenthost/internal/jsonlex"
)

func TestCheckArgumentsRefusesDuplicateKeys(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 2 * guard.ManyKeys {
			b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
		}
		b.WriteString(extra + `}`)
		return b.String()
	}
	tests := []struct {
		name string
		args string
		dup  bool
	}{
		{"top level", `{"q":1,"q":2}`, true},
		{"nested", `{"a":{"b":1,"c":2,"b":3}}`, true},
		{"in an array", `{"rows":[{"x":1},{"y":1,"y":2}]}`, true},
		{"top-level array", `[{"x":1,"x":1}]`, true},
		{"escaped spelling of the same key", `{"a":1,"\u0061":2}`, true},
		{"non-ASCII, escaped and raw", `{"é":1,"\u00e9":2}`, true},
		{"empty key twice", `{"":1,"":2}`, true},
		{"after a nested object", `{"a":{"b":{"c":1}},"d":1,"a":2}`, true},
		{"many keys, repeated late", many(`"kxxx":2`), true},
		{"many keys, none repeated", many(`"other":2`), false},
		{"many keys, repeated with an escape", many(`"k\u0078xx":2`), true},
		{"many keys, then a nested object repeating a key", many(`"in":{"a":1,"a":2}`), true},
		{"many keys, then a nested object with the outer's keys", many(`"in":{"kxxx":1,"k":[{"kx":1}]},"last":1`), false},
		{"nested many keys, then the outer repeats", `{"a":` + many(`"z":1`) + `,"b":1,"a":2}`, true},
		{"invalid UTF-8 decoding to the same key", "{\"\xff\":1,\"\xfe\":2}", true},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, false},
		{"same key as the parent's", `{"a":{"a":{"a":1}}}`, false},
		{"keys differing in case", `{"a":1,"A":2}`, false},
		{"keys differing in separators", `{"a_b":1,"a-b":2}`, false},
		{"repeated string values", `{"a":"x","b":"x","c":["a","a"]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckArguments(json.RawMessage(tc.args), []string{"instance"})
			if got := errors.Is(err, ErrDuplicateKeyInArguments); got != tc.dup || (!tc.dup && err != nil) {
				t.Fatalf("CheckArguments = %v, want duplicate %v", err, tc.dup)
			}
		})
	}
	// A secure name outranks a repeated key.
	err := CheckArguments(json.RawMessage(`{"q":1,"q":2,"Instance":3}`), []string{"instance"})
	if !errors.Is(err, ErrSecureNameInArguments) || errors.Is(err, ErrDuplicateKeyInArguments) {
		t.Fatalf("want ErrSecureNameInArguments, got %v", err)
	}
	if strings.Contains(ErrDuplicateKeyInArguments.Error(), "instance") {
		t.Fatal("the model-visible error names a key")
	}
}

// The ASCII fast path must agree with the general (Unicode) normalisation
// for every ASCII character.
func TestASCIINormalisationAgreesWithUnicode(t *testing.T) {
	for c := range 128 {
		s := "a" + string(rune(c)) + "b"
		if fast, slow := guard.NormaliseName(s), guard.NormaliseUnicode(s); fast != slow {
			t.Errorf("%q: ASCII path %q, Unicode path %q", s, fast, slow)
		}
	}
}

// referenceGuard is the guard computed the slow way: encoding/json's own
// tokenizer for keys, depth and repeats; every key normalised by the
// general Unicode path.
func referenceGuard(args string, secure string) (found, tooDeep, dup bool) {
	dec := json.NewDecoder(strings.NewReader(args))
	type frame struct {
		object bool
		keys   map[string]bool
	}
	var stack []frame
	wantKey := false
	target := guard.NormaliseUnicode(secure)
	for {
		tok, err := dec.Token()
		if err != nil {
			return found, tooDeep, dup
		}
		if wantKey && tok != json.Delim('}') {
			key := tok.(string)
			top := &stack[len(stack)-1]
			if top.keys[key] {
				dup = true
			}
			top.keys[key] = true
			nk := guard.NormaliseUnicode(key)
			if key == secure || (nk == "" || target == "") && strings.EqualFold(key, secure) ||
				nk != "" && target != "" && strings.EqualFold(nk, target) {
				found = true
			}
			wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, frame{object: tok == json.Delim('{'), keys: map[string]bool{}})
			if len(stack) > MaxArgumentDepth {
				return false, true, false
			}
			wantKey = tok == json.Delim('{')
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		wantKey = len(stack) > 0 && stack[len(stack)-1].object
	}
}

// FuzzArgumentGuard checks the guard (lexer, ASCII fast path, repeated-key
// tracking) against referenceGuard: no spelling of a secure name gets
// through the fast path that the general path would catch, and the
// verdicts are the same for any text.
func FuzzArgumentGuard(f *testing.F) {
	seeds := [][2]string{
		{`{"instance\u0000":1}`, "instance"},
		{`{"in\u0001stance":1}`, "instance"},
		{`{"instance\u007f":1}`, "instance"},
		{"{\"instance\x7f\":1}", "instance"},
		{`{"In-Stance":1,"q":[{"x":1,"x":2}]}`, "instance"},
		{`{"a":1,"\u0061":2}`, "tenant_id"},
		{`{"ｔｅｎａｎｔ＿ｉｄ":1}`, "tenant_id"},
		{`{"api_\u212aey":{"REG\u0130ON":1}}`, "region"},
		{`{"\u017fecret":1}`, "secret"},
		{`{"_":1,"-":2}`, "_"},
		{`[[[{"tenant\u200b_id":1}]]]`, "tenant_id"},
		{strings.Repeat(`[`, MaxArgumentDepth+1) + strings.Repeat(`]`, MaxArgumentDepth+1), "x"},
		{`{"q":"x"`, "q"},
		{``, "x"},
		{" {\"x\":1}\f", "x"},
		{"{}\u00a0", "x"},
		{"\r\n{\"a\":1,\"a\":2}\t ", "x"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, args, secure string) {
		if guard.IsPlainASCII(secure) {
			if fast, slow := guard.NormaliseName(secure), guard.NormaliseUnicode(secure); fast != slow {
				t.Fatalf("normalisation of %q: ASCII path %q, Unicode path %q", secure, fast, slow)
			}
		}
		err := CheckArguments(json.RawMessage(args), []string{secure})
		if strings.TrimSpace(args) == "" {
			if err != nil {
				t.Fatalf("empty arguments: %v", err)
			}
			return
		}
		// The host hands the guard the call's check when it holds for the
		// arguments as given: the same verdict and error, without the
		// guard's own validation.
		tool := &Tool{SecureParams: []string{secure}}
		raw := json.RawMessage(args)
		if check := rules.CheckArgs(raw); check.ValidAsGiven(raw) {
			if err2 := tool.CheckValidArguments(raw); fmt.Sprint(err2) != fmt.Sprint(err) || !sameVerdict(err, err2) {
				t.Fatalf("%q: CheckArguments %v, CheckValidArguments %v", args, err, err2)
			}
		}
		if !json.Valid([]byte(args)) {
			if !errors.Is(err, ErrArgumentsNotJSON) {
				t.Fatalf("invalid JSON %q: %v", args, err)
			}
			return
		}
		found, tooDeep, dup := referenceGuard(args, secure)
		var sn *SecureNameError
		isSecure := errors.As(err, &sn)
		switch {
		case tooDeep:
			if !isSecure || !sn.DepthExceeded {
				t.Fatalf("%q nests too deep, got %v", args, err)
			}
		case found:
			if !isSecure || sn.DepthExceeded {
				t.Fatalf("%q names %q (reference), got %v", args, secure, err)
			}
		case dup:
			if !errors.Is(err, ErrDuplicateKeyInArguments) {
				t.Fatalf("%q repeats a key, got %v", args, err)
			}
		default:
			if err != nil {
				t.Fatalf("%q is fine by the reference, got %v", args, err)
			}
		}
		// The guard prepared once per definition gives the same verdict.
		if err2 := (&Tool{SecureParams: []string{secure}}).CheckArguments(json.RawMessage(args)); !sameVerdict(err, err2) {
			t.Fatalf("%q: CheckArguments %v, Tool.CheckArguments %v", args, err, err2)
		}
		// The same keys spelled with escapes only must get the same verdict.
		if escaped := escapeAll(args); escaped != args {
			if err2 := CheckArguments(json.RawMessage(escaped), []string{secure}); !sameVerdict(err, err2) {
				t.Fatalf("%q: %v, escaped %q: %v", args, err, escaped, err2)
			}
		}
	})
}

func sameVerdict(a, b error) bool {
	var sa, sb *SecureNameError
	return errors.As(a, &sa) == errors.As(b, &sb) &&
		errors.Is(a, ErrDuplicateKeyInArguments) == errors.Is(b, ErrDuplicateKeyInArguments) &&
		(a == nil) == (b == nil)
}

// escapeAll re-spells every string of a valid document with \u escapes for
// its ASCII letters (the document's meaning is unchanged).
func escapeAll(doc string) string {
	var b strings.Builder
	lx := jsonlex.New([]byte(doc))
	last := 0
	for kind, raw := lx.Next(); kind != jsonlex.End; kind, raw = lx.Next() {
		if kind != jsonlex.Key && kind != jsonlex.String {
			continue
		}
		end := lx.Pos()
		start := end - len(raw)
		b.WriteString(doc[last:start])
		b.WriteByte('"')
		inner := raw[1 : len(raw)-1]
		for i := 0; i < len(inner); i++ {
			c := inner[i]
			switch {
			case c == '\\':
				n := 2 // \x, or \uXXXX
				if i+1 < len(inner) && inner[i+1] == 'u' {
					n = 6
				}
				b.Write(inner[i:min(i+n, len(inner))])
				i += n - 1
			case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
		last = end
	}
	b.WriteString(doc[last:])
	return b.String()
}
