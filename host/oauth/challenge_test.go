package oauth

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChallenges(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []Challenge
	}{
		{"bearer with params", []string{`Bearer realm="mcp", resource_metadata="https://ex.com/.well-known/oauth-protected-resource/mcp", scope="a b"`},
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"realm": "mcp", "resource_metadata": "https://ex.com/.well-known/oauth-protected-resource/mcp", "scope": "a b"}}}},
		{"two challenges in one header", []string{`Basic realm="x", Bearer error="insufficient_scope", scope="files:write"`},
			[]Challenge{{Scheme: "Basic", Params: map[string]string{"realm": "x"}},
				{Scheme: "Bearer", Params: map[string]string{"error": "insufficient_scope", "scope": "files:write"}}}},
		{"token68", []string{`Negotiate abc+/def==, Bearer`},
			[]Challenge{{Scheme: "Negotiate", Token68: "abc+/def==", Params: map[string]string{}},
				{Scheme: "Bearer", Params: map[string]string{}}}},
		{"escapes and case", []string{`BEARER Scope="a \"q\" b", ERROR=invalid_token`},
			[]Challenge{{Scheme: "BEARER", Params: map[string]string{"scope": `a "q" b`, "error": "invalid_token"}}}},
		{"bare scheme", []string{`Bearer`}, []Challenge{{Scheme: "Bearer", Params: map[string]string{}}}},
		{"spaces around equals", []string{`Bearer scope = "x" , realm=y`},
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "x", "realm": "y"}}}},
		{"unterminated quote", []string{`Bearer scope="abc`}, []Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "abc"}}}},
		{"first value of a repeated param wins", []string{`Bearer scope="a", scope="b"`},
			[]Challenge{{Scheme: "Bearer", Params: map[string]string{"scope": "a"}}}},
		{"garbage", []string{`,,, "=" ,`}, nil},
		{"two headers", []string{`Basic realm="a"`, `Bearer scope="s"`},
			[]Challenge{{Scheme: "Basic", Params: map[string]string{"realm": "a"}}, {Scheme: "Bearer", Params: map[string]string{"scope": "s"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseChallenges(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseChallenges(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestBearerChallenge(t *testing.T) {
	h := http.Header{}
	h.Add("WWW-Authenticate", `Basic realm="x"`)
	h.Add("WWW-Authenticate", `Bearer scope="read write"`)
	c, ok := BearerChallenge(h)
	if !ok || c.Param("SCOPE") != "read write" || len(c.Scopes()) != 2 {
		t.Fatalf("BearerChallenge = %+v, %v", c, ok)
	}
	if _, ok := BearerChallenge(http.Header{}); ok {
		t.Fatal("BearerChallenge found a challenge in no header")
	}
}
