package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// reference is what encoding/json writes for s.
func reference(t testing.TB, s string, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var samples = []string{
	"", "plain", `quote " backslash \ slash /`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\u2028\u2029", "é ü 日本 🎉", "bad \xff\xfe utf8 \xc3", "\xe2\x80",
	"mixed <\n\xff\u2028>",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		for _, html := range []bool{true, false} {
			if got, want := AppendString([]byte("x"), s, html), append([]byte("x"), reference(t, s, html)...); !bytes.Equal(got, want) {
				t.Errorf("AppendString(%q, html=%v) = %s, want %s", s, html, got, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range samples {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := AppendString(nil, s, html), reference(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q, html=%v) = %s, want %s", s, html, got, want)
		}
	})
}

// TestPlainBytes: the sets of bytes copied as they are, byte by byte.
func TestPlainBytes(t *testing.T) {
	for b := range 256 {
		want := b >= 0x20 && b < 0x80 && b != '"' && b != '\\'
		if got := isPlain(&plainText, byte(b)); got != want {
			t.Errorf("plainText[%#x] = %v", b, got)
		}
		wantHTML := want && b != '<' && b != '>' && b != '&'
		if got := isPlain(&plainHTML, byte(b)); got != wantHTML {
			t.Errorf("plainHTML[%#x] = %v", b, got)
		}
	}
}
