package config

import (
	"testing"
)

func TestOAuthValidation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"on a stdio server", "mcpServers:\n  t: {command: x, oauth: {clientId: a}}\n", []string{"cfg.yaml: mcpServers.t.oauth: only applies to servers reached by url"}},
		{"with a static Authorization header", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', headers: {authorization: 'Bearer x'}, oauth: {clientId: a}}\n",
			[]string{"cfg.yaml: mcpServers.t.oauth: a static Authorization header and oauth exclude each other; remove one (or set oauth.disabled: true)"}},
		{"bad grant and method", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: password, tokenEndpointAuthMethod: tls}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.grant: must be authorization_code, client_credentials, id-jag or jwt-bearer",
			"cfg.yaml: mcpServers.t.oauth.tokenEndpointAuthMethod: must be client_secret_basic, client_secret_post, none or private_key_jwt",
		}},
		{"client credentials without client", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: client_credentials}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.clientId: is required with grant: client_credentials",
			"cfg.yaml: mcpServers.t.oauth: grant: client_credentials needs clientSecret, privateKey or privateKeyFile",
		}},
		{"jwt without key, secret without id, http metadata URL, bad scope", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {tokenEndpointAuthMethod: private_key_jwt, clientSecret: s, clientMetadataUrl: 'http://c.example.com/m.json', scopes: ['a b']}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.tokenEndpointAuthMethod: private_key_jwt needs privateKey or privateKeyFile",
			"cfg.yaml: mcpServers.t.oauth.clientSecret: needs clientId",
			"cfg.yaml: mcpServers.t.oauth.clientMetadataUrl: must be an https:// URL",
			"cfg.yaml: mcpServers.t.oauth.scopes[0]: must be one scope token without spaces or quotes",
		}},
		{"id-jag without client, IdP or ID token", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: id-jag, idpClientSecret: s}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.clientId: is required with grant: id-jag",
			"cfg.yaml: mcpServers.t.oauth.idpTokenEndpoint: is required with grant: id-jag",
			"cfg.yaml: mcpServers.t.oauth: grant: id-jag needs idToken or idTokenFile",
			"cfg.yaml: mcpServers.t.oauth.idpClientSecret: needs idpClientId",
		}},
		{"id-jag with both ID token forms and a bad endpoint", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: id-jag, clientId: a, idpTokenEndpoint: 'ftp://idp', idToken: x, idTokenFile: f}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.idpTokenEndpoint: must be an http(s) URL",
			"cfg.yaml: mcpServers.t.oauth.idToken: set idToken or idTokenFile, not both",
		}},
		{"jwt-bearer without an assertion source", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: jwt-bearer}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth: grant: jwt-bearer needs assertionFile or assertionCommand (one of them)",
		}},
		{"jwt-bearer with both sources and a bad pin", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {grant: jwt-bearer, assertionFile: f, assertionCommand: c, assertionSha256: abc}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth: grant: jwt-bearer needs assertionFile or assertionCommand (one of them)",
			"cfg.yaml: mcpServers.t.oauth.assertionSha256: must be 64 hex digits",
		}},
		{"assertion settings of another grant, args without a command, bad dpop", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {assertionFile: f, assertionArgs: [a], dpop: always}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.assertionFile: only applies to grant: jwt-bearer",
			"cfg.yaml: mcpServers.t.oauth.assertionArgs: only applies to grant: jwt-bearer",
			"cfg.yaml: mcpServers.t.oauth.assertionCommand: is required with assertionArgs or assertionSha256",
			"cfg.yaml: mcpServers.t.oauth.dpop: must be auto, required or off",
		}},
		{"both key forms", "mcpServers:\n  t: {url: 'https://m.example.com/mcp', oauth: {clientId: a, privateKey: k, privateKeyFile: f}}\n", []string{
			"cfg.yaml: mcpServers.t.oauth.privateKey: set privateKey or privateKeyFile, not both",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "yaml", "cfg.yaml")
			requireLines(t, err, tc.want...)
		})
	}
}

func TestOAuthExpansion(t *testing.T) {
	isolateEnv(t)
	t.Setenv("T_SECRET", "s3cret")
	t.Setenv("T_KEY", "-----BEGIN PRIVATE KEY-----")
	doc := `
mcpServers:
  remote:
    url: https://m.example.com/mcp
    oauth:
      clientId: agenthost-cli
      clientSecret: ${T_SECRET}
      privateKey: ${T_KEY}
      grant: client_credentials
      scopes: [mcp:read, mcp:write]
      clientMetadataUrl: https://c.example.com/agenthost.json
      tokenEndpointAuthMethod: private_key_jwt
`
	cfg, err := Parse([]byte(doc), "yaml", "agenthost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.MCPServers["remote"].OAuth
	if o == nil || o.ClientID != "agenthost-cli" || o.ClientSecret != "s3cret" || o.PrivateKey != "-----BEGIN PRIVATE KEY-----" ||
		o.Grant != GrantClientCredentials || len(o.Scopes) != 2 || o.ClientMetadataURL != "https://c.example.com/agenthost.json" ||
		o.TokenEndpointAuthMethod != "private_key_jwt" {
		t.Fatalf("oauth = %+v", o)
	}
	t.Setenv("T_WIF", "/var/run/wif/token")
	cfg, err = Parse([]byte("mcpServers:\n  w: {url: 'https://m.example.com/mcp', oauth: {grant: jwt-bearer, assertionFile: '${T_WIF}', dpop: required}}\n"), "yaml", "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.MCPServers["w"].OAuth; o.Grant != GrantJWTBearer || o.AssertionFile != "/var/run/wif/token" || o.DPoP != DPoPRequired {
		t.Fatalf("oauth = %+v", o)
	}
	if _, err := Parse([]byte("mcpServers:\n  r: {url: 'https://m.example.com/mcp', oauth: {clientId: a, clientSecret: '${T_UNSET_SECRET}'}}\n"), "yaml", "c.yaml"); err == nil {
		t.Fatal("an unset ${VAR} in oauth.clientSecret was accepted")
	}
}
