package jsonenc

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// plainPrefixBefore is AppendString's scan as it was before plainPrefix
// (one byte at a time through a two-word set). The scan is the only part
// of AppendString that changed, so plainPrefix finding the same prefix for
// any string means AppendString writes what it wrote (and, as before,
// what encoding/json writes: FuzzAppendString).
var (
	plainTextBefore = [2]uint64{0xfffffffb00000000, 0xffffffffefffffff}
	plainHTMLBefore = [2]uint64{0xafffffbb00000000, 0xffffffffefffffff}
)

func plainPrefixBefore(s string, escapeHTML bool) int {
	plain := &plainTextBefore
	if escapeHTML {
		plain = &plainHTMLBefore
	}
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf && plain[s[i]>>6]&(1<<(s[i]&63)) != 0 {
		i++
	}
	return i
}

// appendStringBefore is AppendString with the scan before plainPrefix.
func appendStringBefore(dst []byte, s string, escapeHTML bool) []byte {
	if i := plainPrefixBefore(s, escapeHTML); i == len(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	return AppendString(dst, s, escapeHTML) // the same loop from the first byte to escape
}

// scanSamples put every kind of byte at every position of an eight-byte
// word, and after runs of plain bytes of every length around a word.
func scanSamples() []string {
	specials := []string{"\x00", "\x1f", " ", "\"", "\\", "<", ">", "&", "\x7f", "\x80", "\xff", "\u2028", "\u2029", "é", "\xe2\x80", "\n"}
	var out []string
	for n := range 20 {
		run := strings.Repeat("a~", 10)[:n]
		for _, sp := range specials {
			out = append(out, run+sp, run+sp+run, sp+run)
		}
	}
	return out
}

func TestPlainPrefixMatchesBefore(t *testing.T) {
	for _, s := range append(scanSamples(), samples...) {
		for _, html := range []bool{true, false} {
			if got, want := plainPrefix(s, html), plainPrefixBefore(s, html); got != want {
				t.Errorf("plainPrefix(%q, html=%v) = %d, before %d", s, html, got, want)
			}
			if got, want := AppendString([]byte("x"), s, html), append([]byte("x"), reference(t, s, html)...); !bytes.Equal(got, want) {
				t.Errorf("AppendString(%q, html=%v) = %s, want %s", s, html, got, want)
			}
		}
	}
}

// FuzzPlainPrefixMatchesBefore: the word-at-a-time scan stops where the
// byte-at-a-time one did, for any bytes (invalid UTF-8, U+2028/2029,
// control bytes, < > &), and AppendString still writes what
// encoding/json does.
func FuzzPlainPrefixMatchesBefore(f *testing.F) {
	for _, s := range append(scanSamples(), samples...) {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := plainPrefix(s, html), plainPrefixBefore(s, html); got != want {
			t.Fatalf("plainPrefix(%q, html=%v) = %d, before %d", s, html, got, want)
		}
		if got, want := AppendString(nil, s, html), reference(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q, html=%v) = %s, want %s", s, html, got, want)
		}
	})
}

// BenchmarkAppendString: the strings of an audit record (enum values,
// names, hashes) and a longer plain text.
func BenchmarkAppendString(b *testing.B) {
	strs := []string{"read", "low", "catalogue", "orders__lookup_order", "sha256:0f3a9c1d2e4b5a6f7081928374655647", "auto_allowed",
		"Look up one order of the current tenant by id, with its status and total."}
	for _, c := range []struct {
		name string
		fn   func([]byte, string, bool) []byte
	}{{"now", AppendString}, {"before", appendStringBefore}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 512)
			for b.Loop() {
				buf = buf[:0]
				for _, s := range strs {
					buf = c.fn(buf, s, false)
				}
			}
		})
	}
}
