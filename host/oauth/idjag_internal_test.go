package oauth

import (
	"strings"
	"testing"
)

const jagCanary = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.CANARY-JAG.sig"

var idjagAnswers = []struct {
	name, body, want, err string
}{
	{"ok", `{"access_token":"` + jagCanary + `","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`, jagCanary, ""},
	{"not JSON", `<html>`, "", "not valid JSON"},
	{"no token", `{"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`, "", "no access_token"},
	{"access token type", `{"access_token":"` + jagCanary + `","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}`, "", "not an ID-JAG"},
	{"no type", `{"access_token":"` + jagCanary + `"}`, "", "not an ID-JAG"},
	{"not a JWT", `{"access_token":"CANARY-opaque","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`, "", "not a compact JWT"},
	{"token not a string", `{"access_token":5,"issued_token_type":"urn:ietf:params:oauth:token-type:id-jag"}`, "", "not valid JSON"},
}

func TestParseIDJAGAnswer(t *testing.T) {
	for _, tt := range idjagAnswers {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseIDJAGAnswer([]byte(tt.body))
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("parseIDJAGAnswer = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one containing %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("the error shows the token: %v", err)
			}
		})
	}
}

func FuzzParseIDJAGAnswer(f *testing.F) {
	for _, tt := range idjagAnswers {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseIDJAGAnswer(body)
		if err != nil {
			if got != "" {
				t.Fatalf("a token (%q) with an error", got)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("the error shows the token: %v", err)
			}
			return
		}
		if strings.Count(got, ".") != 2 {
			t.Fatalf("accepted %q", got)
		}
	})
}
