package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		{"workload", `{"client_id":"w","valid_jwt":"a.b.c","expired_jwt":"x.y.z"}`,
			append(slices.Clone(base), "AGENTHOST_OAUTH_CLIENT_ID=w", "AGENTHOST_OAUTH_ASSERTION_FILE=@/assertion"), false},
		{"not JSON", `{`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := environment(slices.Clone(base), tc.context, dir)
			if (err != nil) != tc.fails {
				t.Fatalf("environment: %v, want failure %v", err, tc.fails)
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			for i, w := range want {
				want[i] = strings.Replace(w, "@", dir, 1)
			}
			slices.Sort(want)
			if !tc.fails && !slices.Equal(got, want) {
				t.Errorf("environment = %q, want %q", got, want)
			}
		})
	}
}

// The assertion file holds valid_jwt alone, readable by its owner only.
func TestAssertionFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := environment(nil, `{"valid_jwt":"a.b.c"}`, dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "assertion")
	data, err := os.ReadFile(file)
	fi, _ := os.Stat(file)
	if err != nil || string(data) != "a.b.c" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("assertion file %q, %v, %v", data, fi.Mode(), err)
	}
}
