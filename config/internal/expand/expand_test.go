package expand

import (
	"strings"
	"testing"
)

func TestExpandString(t *testing.T) {
	env := map[string]string{"HOST": "example.test", "EMPTY": "", "TOKEN": "t0k", "DOLLARS": "a$b${HOST}"}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "plain", want: "plain"},
		{in: "${HOST}", want: "example.test"},
		{in: "https://${HOST}:8443/${TOKEN}", want: "https://example.test:8443/t0k"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${EMPTY}", want: ""},
		{in: "${HOST:-unused}", want: "example.test"},
		{in: "${MISSING:-}", want: ""},
		{in: "${MISSING:-${HOST}}", want: "example.test"},
		{in: "${MISSING:-${ALSO_MISSING:-deep}}", want: "deep"},
		{in: "${MISSING:-a}b}", want: "ab}"},
		{in: "cost $$5", want: "cost $5"},
		{in: "$${HOST}", want: "${HOST}"},
		{in: "$$$$", want: "$$"},
		{in: "${MISSING:-$$x}", want: "$x"},
		{in: "pa$word $ end$", want: "pa$word $ end$"},
		{in: "${DOLLARS}", want: "a$b${HOST}"}, // values are not expanded again
		{in: "${MISSING}", wantErr: "environment variable MISSING is not set"},
		{in: "x ${HOST} ${MISSING}", wantErr: "environment variable MISSING is not set"},
		{in: "${MISSING:-${ALSO_MISSING}}", wantErr: "in the default for MISSING: environment variable ALSO_MISSING is not set"},
		{in: "${HOST", wantErr: "unterminated ${ reference (missing })"},
		{in: "${MISSING:-${HOST}", wantErr: "unterminated ${ reference (missing })"},
		{in: "${}", wantErr: "invalid ${...} reference"},
		{in: "${1ABC}", wantErr: "invalid ${...} reference"},
		{in: "${A-B}", wantErr: "invalid ${...} reference"},
		{in: "${sk-secretish}", wantErr: "invalid ${...} reference"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := String(tc.in, lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("String(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secretish") || strings.Contains(err.Error(), "t0k") {
					t.Errorf("error shows input or value: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("String(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
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
			got, err := String(tc.in, lookup)
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
		got, err := String(s, lookup)
		if err != nil && got != "" {
			t.Fatalf("error %v with output %q", err, got)
		}
		if !strings.Contains(s, "$") && (err != nil || got != s) {
			t.Fatalf("String(%q) = %q, %v", s, got, err)
		}
	})
}
