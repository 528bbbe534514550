package config

import (
	"strings"
	"testing"
)

func TestLoadReadsAFileOfTheMaximumSize(t *testing.T) {
	dir := t.TempDir()
	body := "llm: {model: m}\n"
	path := writeFile(t, dir, "max.yaml", body+"#"+strings.Repeat("x", MaxFileBytes-len(body)-2)+"\n")
	if _, err := Load(path); err != nil {
		t.Fatalf("Load of a %d-byte file: %v", MaxFileBytes, err)
	}
}

func TestExpandStringNestingDepth(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	nested := func(n int) string {
		return strings.Repeat("${A:-", n) + "end" + strings.Repeat("}", n)
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "at the limit", in: nested(MaxReferenceDepth), want: "end"},
		{name: "at the limit after text", in: "x" + nested(MaxReferenceDepth) + nested(2), want: "xendend"},
		{name: "one beyond", in: nested(MaxReferenceDepth + 1), wantErr: true},
		{name: "50000 deep", in: nested(50000), wantErr: true},
		{name: "one beyond inside a default", in: "${A:-x" + nested(MaxReferenceDepth) + "}", wantErr: true},
		{name: "unterminated deep", in: strings.Repeat("${A:-", 50000), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expandString(tc.in, lookup)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "nested more than 32 deep") {
					t.Fatalf("error = %v, want the nesting limit", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzExpandString: expansion never panics, never returns text for an
// error, and leaves a string without $ as it is.
func FuzzExpandString(f *testing.F) {
	for _, seed := range []string{"plain", "${A}", "${A:-${B:-x}}", "$$", "${", "}${A:-", strings.Repeat("${A:-", 40) + strings.Repeat("}", 40), "${A:-$${B}}"} {
		f.Add(seed)
	}
	lookup := func(name string) (string, bool) { return "v", name == "A" }
	f.Fuzz(func(t *testing.T, s string) {
		got, err := expandString(s, lookup)
		if err != nil && got != "" {
			t.Fatalf("error %v with output %q", err, got)
		}
		if !strings.Contains(s, "$") && (err != nil || got != s) {
			t.Fatalf("expandString(%q) = %q, %v", s, got, err)
		}
	})
}
