package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tokenHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestServeValidation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"bad listen", "serve: {listen: 8080}\n", []string{"cfg.yaml: serve.listen: must be HOST:PORT (for example 127.0.0.1:8080)"}},
		{"identity without name", "serve: {identities: [{tokenSHA256: " + tokenHash + ", roles: [api]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].name: must not be empty"}},
		{"repeated identity", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + ", roles: [api]}, {name: a, tokenSHA256: " + tokenHash + ", roles: [api]}]}\n",
			[]string{`cfg.yaml: serve.identities[1].name: repeats the identity "a" (names are compared normalised)`}},
		{"identity names repeated under another spelling", "serve: {identities: [{name: ops, tokenSHA256: " + tokenHash + ", roles: [api]}, {name: OPS, tokenSHA256: " + tokenHash + ", roles: [approver]}]}\n",
			[]string{`cfg.yaml: serve.identities[1].name: repeats the identity "ops" (names are compared normalised)`}},
		{"identity name with an invisible character", "serve: {identities: [{name: \"ops\\u034f\", tokenSHA256: " + tokenHash + ", roles: [approver]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].name: is not a valid identity name (it holds an invisible, default-ignorable or otherwise refused character; see docs/config.md, approvals)"}},
		{"subject pattern not normalised", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + ", roles: [api], subjects: [Customer-*]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].subjects[0]: must be written in normalised form (lower case, no invisible characters): it is matched against normalised subjects"}},
		{"subject pattern malformed", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + ", roles: [api], subjects: ['customer-[']}]}\n",
			[]string{`cfg.yaml: serve.identities[0].subjects[0]: is not a valid pattern (*, ?, [a-z], [!a-z], \ to escape)`}},
		{"tenant with an invisible character", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + ", roles: [api], tenant: \"t\\u200b\"}]}\n",
			[]string{"cfg.yaml: serve.identities[0].tenant: is not a valid tenant name (it holds an invisible, default-ignorable or otherwise refused character)"}},
		{"token not a hash", "serve: {identities: [{name: a, tokenSHA256: secret-token, roles: [api]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].tokenSHA256: must be 64 hex digits (sha256sum of the token)"}},
		{"no way to authenticate", "serve: {identities: [{name: a, roles: [api]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].tokenSHA256: is required unless serve.tls.clientCA is set (the identity could not authenticate)"}},
		{"unknown role", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + ", roles: [admin]}]}\n",
			[]string{"cfg.yaml: serve.identities[0].roles[0]: must be api or approver"}},
		{"no role", "serve: {identities: [{name: a, tokenSHA256: " + tokenHash + "}]}\n",
			[]string{"cfg.yaml: serve.identities[0].roles: must name at least one of api, approver"}},
		{"cert without key", "serve: {tls: {cert: a.pem}}\n", []string{"cfg.yaml: serve.tls: set both cert and key, or neither"}},
		{"client CA without TLS", "serve: {tls: {clientCA: ca.pem}}\n",
			[]string{"cfg.yaml: serve.tls.clientCA: needs serve.tls.cert and serve.tls.key (mutual TLS runs over HTTPS)"}},
		{"webhook without secret", "serve: {webhooks: [{url: 'http://127.0.0.1:9/hook'}]}\n",
			[]string{"cfg.yaml: serve.webhooks[0].secret: is required (receivers verify the signature with it)"}},
		{"webhook bad url", "serve: {webhooks: [{url: hook, secret: s}]}\n",
			[]string{"cfg.yaml: serve.webhooks[0].url: must be an absolute http:// or https:// URL"}},
		{"peers without id", "serve: {replica: {peers: {b: 'http://127.0.0.1:9'}}}\n",
			[]string{"cfg.yaml: serve.replica.id: is required when serve.replica.peers is set"}},
		{"replica id with dash", "serve: {replica: {id: a-b}}\n",
			[]string{"cfg.yaml: serve.replica.id: must not contain '-', '/' or spaces (it prefixes ids)"}},
		{"lease too short", "serve: {replica: {leaseTimeout: 1s}}\n",
			[]string{"cfg.yaml: serve.replica.leaseTimeout: must be at least 2s"}},
		{"negative lease", "serve: {replica: {leaseTimeout: -5s}}\n",
			[]string{"cfg.yaml: serve.replica.leaseTimeout: must be at least 2s"}},
		{"negative limits", "serve: {maxSessionsPerIdentity: -1, maxApprovalStreamsPerIdentity: -1, idleTimeout: -1s, maxConnectionsPerClient: -2}\n", []string{
			"cfg.yaml: serve.maxSessionsPerIdentity: must be positive",
			"cfg.yaml: serve.maxApprovalStreamsPerIdentity: must be positive",
			"cfg.yaml: serve.idleTimeout: must be positive",
			"cfg.yaml: serve.maxConnectionsPerClient: must be positive"}},
		{"tiny event limits", "serve: {events: {maxResultBytes: 10, maxTotalBytes: 1023}}\n", []string{
			"cfg.yaml: serve.events.maxResultBytes: must be at least 1024 bytes (0 or absent: the default)",
			"cfg.yaml: serve.events.maxTotalBytes: must be at least 1024 bytes (0 or absent: the default)"}},
		{"unknown serve key", "serve: {listn: ':1'}\n", []string{`cfg.yaml: serve.listn: unknown key (did you mean "listen"?)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "yaml", "cfg.yaml")
			requireLines(t, err, tc.want...)
			if got := len(errorLines(t, err)); got != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%v", got, len(tc.want), err)
			}
		})
	}
}

// The shared mode's replica settings are read: the lease, and the key
// file's path, relative to the config file.
func TestServeReplicaSharedSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(path, []byte("serve: {replica: {id: r1, leaseTimeout: 10s, sessionKeyFile: keys/session}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Serve.Replica
	if r.ID != "r1" || r.LeaseTimeout != 10*time.Second || r.SessionKeyFile != filepath.Join(dir, "keys", "session") {
		t.Errorf("replica settings %+v", r)
	}
}

func TestServeWebhookSecretExpands(t *testing.T) {
	t.Setenv("HOOK_SECRET", "s3cr3t-canary")
	cfg, err := Parse([]byte("serve:\n  listen: 127.0.0.1:0\n  identities: [{name: alice, tokenSHA256: "+tokenHash+", roles: [approver]}]\n  webhooks: [{url: 'http://127.0.0.1:9/hook', secret: '${HOOK_SECRET}'}]\n"), "yaml", "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Serve.Webhooks[0].Secret; got != "s3cr3t-canary" {
		t.Errorf("secret = %q, want the expanded variable", got)
	}
	if !cfg.Serve.Identities[0].HasRole(RoleApprover) || cfg.Serve.Identities[0].HasRole(RoleAPI) {
		t.Errorf("roles = %v", cfg.Serve.Identities[0].Roles)
	}
	_, err = Parse([]byte("serve:\n  webhooks: [{url: 'http://127.0.0.1:9/hook', secret: '${HOOK_SECRET_UNSET_X}'}]\n"), "yaml", "cfg.yaml")
	if err == nil || !strings.Contains(err.Error(), "serve.webhooks[0].secret") {
		t.Errorf("unset variable: err = %v, want it to name serve.webhooks[0].secret", err)
	}
}
