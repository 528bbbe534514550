package main

import (
	"slices"
	"testing"
)

func TestEnvironment(t *testing.T) {
	base := []string{"PATH=/bin"}
	for _, tc := range []struct {
		name, context string
		want          []string
		fails         bool
	}{
		{"no context", "", base, false},
		{"client", `{"name":"auth/pre-registration","client_id":"id","client_secret":"s"}`,
			append(slices.Clone(base), "AGENTHOST_OAUTH_CLIENT_ID=id", "AGENTHOST_OAUTH_CLIENT_SECRET=s"), false},
		{"key", `{"client_id":"id","private_key_pem":"PEM","signing_algorithm":"ES256"}`,
			append(slices.Clone(base), "AGENTHOST_OAUTH_CLIENT_ID=id", "AGENTHOST_OAUTH_PRIVATE_KEY=PEM"), false},
		{"enterprise", `{"client_id":"id","client_secret":"s","idp_client_id":"icid","idp_id_token":"idt","idp_issuer":"http://idp","idp_token_endpoint":"http://idp/token"}`,
			append(slices.Clone(base), "AGENTHOST_OAUTH_CLIENT_ID=id", "AGENTHOST_OAUTH_CLIENT_SECRET=s", "AGENTHOST_OAUTH_IDP_CLIENT_ID=icid",
				"AGENTHOST_OAUTH_ID_TOKEN=idt", "AGENTHOST_OAUTH_IDP_TOKEN_ENDPOINT=http://idp/token"), false},
		{"not strings", `{"client_id":7}`, base, false},
		{"not JSON", `{`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := environment(slices.Clone(base), tc.context)
			if (err != nil) != tc.fails {
				t.Fatalf("environment: %v, want failure %v", err, tc.fails)
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !tc.fails && !slices.Equal(got, want) {
				t.Errorf("environment = %q, want %q", got, want)
			}
		})
	}
}
