package tokenwire

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"
)

func TestExpiresIn(t *testing.T) {
	tests := []struct {
		raw  string
		want int64
		ok   bool
	}{
		{`3600`, 3600, true}, {`"3600"`, 3600, true}, {`59.9`, 59, true},
		{``, 0, false}, {`0`, 0, false}, {`-5`, 0, false}, {`"soon"`, 0, false}, {`999999999999`, 0, false},
	}
	for _, tt := range tests {
		if got, ok := ExpiresIn(json.RawMessage(tt.raw)); got != tt.want || ok != tt.ok {
			t.Errorf("ExpiresIn(%s) = %d, %v; want %d, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRedactSent: every value a request sent but the public parameters is
// a secret, redacted from an answer's text as sent and form-encoded;
// values too short to be secrets are not searched for.
func TestRedactSent(t *testing.T) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"rt/secret+1"}, "client_id": {"app"}}
	sent := SentSecrets(form, "client-pw", "ab")
	if slices.Contains(sent, "refresh_token") || slices.Contains(sent, "app") || !slices.Contains(sent, "rt/secret+1") {
		t.Fatalf("secrets %q", sent)
	}
	got := Redact("bad rt/secret+1 or rt%2Fsecret%2B1, client-pw, ab, app", sent)
	if want := "bad [redacted] or [redacted], [redacted], ab, app"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

func TestClip(t *testing.T) {
	if got := Clip("a\x00b\nc\x7fdé\xff", 100); got != "abcdé" {
		t.Errorf("Clip dropped too little: %q", got)
	}
	if got := Clip("abcdef", 3); got != "abc" {
		t.Errorf("Clip(abcdef, 3) = %q", got)
	}
}

func TestErrorCode(t *testing.T) {
	if got := ErrorCode([]byte(`{"error":"use_dpop_nonce"}`)); got != "use_dpop_nonce" {
		t.Errorf("ErrorCode = %q", got)
	}
	if got := ErrorCode([]byte(`not json`)); got != "" {
		t.Errorf("ErrorCode of no JSON = %q", got)
	}
}
