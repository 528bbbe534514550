package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnvName(t *testing.T) {
	tests := []struct {
		parts []string
		want  string
	}{
		{[]string{"llm", "model"}, "AGENTHOST_LLM_MODEL"},
		{[]string{"llm", "baseURL"}, "AGENTHOST_LLM_BASEURL"},
		{[]string{"session", "trustLevel"}, "AGENTHOST_SESSION_TRUSTLEVEL"},
		{[]string{"approvals", "noMatch"}, "AGENTHOST_APPROVALS_NOMATCH"},
		{[]string{"mcpServers", "my-server.v2", "url"}, "AGENTHOST_MCPSERVERS_MY_SERVER_V2_URL"},
	}
	for _, tc := range tests {
		if got := EnvName(tc.parts...); got != tc.want {
			t.Errorf("EnvName(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestEnvOverrides(t *testing.T) {
	const doc = `
llm: {baseURL: "http://127.0.0.1:1/v1", model: file-model, timeout: 30s}
mcpServers:
  My-Server: {url: "http://127.0.0.1:2/mcp", callTimeout: 5s}
  local: {command: run}
sources:
  Vault: {plugin: ./p, sha256: ` + testSHA + `}
session: {trustLevel: 2}
audit: {path: ./file.jsonl}
`
	tests := []struct {
		name  string
		env   map[string]string
		check func(*Config) string // returns what is wrong, or ""
	}{
		{
			name: "llm settings",
			env: map[string]string{"AGENTHOST_LLM_MODEL": "env-model", "AGENTHOST_LLM_BASEURL": "http://127.0.0.1:9/v1",
				"AGENTHOST_LLM_APIKEY": "k", "AGENTHOST_LLM_TIMEOUT": "45s"},
			check: func(c *Config) string {
				if c.LLM.Model != "env-model" || c.LLM.BaseURL != "http://127.0.0.1:9/v1" || c.LLM.APIKey != "k" || c.LLM.Timeout != 45*time.Second {
					return "llm = " + c.LLM.Model + " " + c.LLM.BaseURL + " " + c.LLM.Timeout.String()
				}
				return ""
			},
		},
		{
			name: "session, audit and approvals",
			env: map[string]string{"AGENTHOST_SESSION_TRUSTLEVEL": "4", "AGENTHOST_AUDIT_PATH": "-",
				"AGENTHOST_APPROVALS_UNCLASSIFIED": "infer", "AGENTHOST_APPROVALS_NOMATCH": "deny", "AGENTHOST_APPROVALS_TIMEOUT": "1m"},
			check: func(c *Config) string {
				if c.Session.TrustLevel != 4 || c.Audit.Path != "-" || c.Approvals.Unclassified != "infer" ||
					c.Approvals.NoMatch != "deny" || c.Approvals.Timeout != time.Minute {
					return "wrong values"
				}
				return ""
			},
		},
		{
			name: "approvals and audit stores",
			env:  map[string]string{"AGENTHOST_APPROVALS_STORE": "sqlite:./a.db", "AGENTHOST_AUDIT_STORE": "postgres://u@db/x"},
			check: func(c *Config) string {
				if c.Approvals.Store != "sqlite:./a.db" || c.Audit.Store != "postgres://u@db/x" {
					return "stores = " + c.Approvals.Store + " " + c.Audit.Store
				}
				return ""
			},
		},
		{
			name: "server and source settings by sanitized name",
			env: map[string]string{"AGENTHOST_MCPSERVERS_MY_SERVER_URL": "http://127.0.0.1:3/mcp",
				"AGENTHOST_MCPSERVERS_MY_SERVER_CALLTIMEOUT": "7s", "AGENTHOST_MCPSERVERS_LOCAL_DISABLED": "true",
				"AGENTHOST_MCPSERVERS_MY_SERVER_TYPE": "sse", "AGENTHOST_SOURCES_VAULT_PLUGIN": "./other"},
			check: func(c *Config) string {
				s := c.MCPServers["My-Server"]
				if s.URL != "http://127.0.0.1:3/mcp" || s.CallTimeout != 7*time.Second || s.Type != TransportSSE ||
					!c.MCPServers["local"].Disabled || filepath.Base(c.Sources["Vault"].Plugin) != "other" {
					return "wrong values"
				}
				return ""
			},
		},
		{
			name: "override values are literal, not expanded",
			env:  map[string]string{"AGENTHOST_LLM_APIKEY": "a${B}$$c"},
			check: func(c *Config) string {
				if c.LLM.APIKey != "a${B}$$c" {
					return "apiKey = " + c.LLM.APIKey
				}
				return ""
			},
		},
		{
			name: "empty variables count as unset",
			env:  map[string]string{"AGENTHOST_LLM_MODEL": ""},
			check: func(c *Config) string {
				if c.LLM.Model != "file-model" {
					return "model = " + c.LLM.Model
				}
				return ""
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolateEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := writeFile(t, t.TempDir(), "agenthost.yaml", doc)
			cfg, err := Load(path)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if msg := tc.check(cfg); msg != "" {
				t.Error(msg)
			}
			// Parse is for embedding: it never reads AGENTHOST_*.
			parsed, err := Parse([]byte(doc), "yaml", path)
			if err != nil {
				t.Fatal(err)
			}
			if parsed.LLM.Model != "file-model" || parsed.Session.TrustLevel != 2 || parsed.Audit.Path != "./file.jsonl" {
				t.Errorf("Parse applied environment overrides: %+v", parsed)
			}
		})
	}
}

func TestEnvOverrideLetsUnexpandedServerStayOff(t *testing.T) {
	isolateEnv(t)
	unsetEnv(t, "NEVER_SET")
	t.Setenv("AGENTHOST_MCPSERVERS_OFF_DISABLED", "true")
	path := writeFile(t, t.TempDir(), "agenthost.yaml", "mcpServers:\n  off: {url: 'http://${NEVER_SET}/'}\n")
	if _, err := Load(path); err != nil {
		t.Fatalf("a server disabled from the environment must not need its variables: %v", err)
	}
}

func TestEnvOverrideErrorsNameKeyAndVariable(t *testing.T) {
	isolateEnv(t)
	const canary = "canary-4f1d2e"
	t.Setenv("AGENTHOST_SESSION_TRUSTLEVEL", canary)
	t.Setenv("AGENTHOST_LLM_TIMEOUT", canary)
	t.Setenv("AGENTHOST_MCPSERVERS_S_DISABLED", canary)
	path := writeFile(t, t.TempDir(), "agenthost.yaml", "mcpServers:\n  s: {command: run}\n")
	_, err := Load(path)
	requireLines(t, err,
		path+": llm.timeout: AGENTHOST_LLM_TIMEOUT is not a duration (use Go syntax such as \"60s\" or \"10m\")",
		path+": mcpServers.s.disabled: AGENTHOST_MCPSERVERS_S_DISABLED is not true or false",
		path+": session.trustLevel: AGENTHOST_SESSION_TRUSTLEVEL is not an integer",
	)
	if strings.Contains(err.Error(), canary) {
		t.Errorf("error shows an environment value: %v", err)
	}

	// Out of range values from the environment are validated like the file's.
	isolateEnv(t)
	t.Setenv("AGENTHOST_SESSION_TRUSTLEVEL", "9")
	_, err = Load(path)
	requireLines(t, err, path+": session.trustLevel: must be between 1 and 5")
}

// TestEnvOverrideReadsTheSettingsOwnVariable: a setting's override is the
// variable EnvName names (a server name's dots and dashes as
// underscores), and an empty variable is no override.
func TestEnvOverrideReadsTheSettingsOwnVariable(t *testing.T) {
	env := map[string]string{"AGENTHOST_MCPSERVERS_MY_SERVER_V2_URL": "http://127.0.0.1:9/mcp", "AGENTHOST_LLM_MODEL": ""}
	lookup := func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	for _, tc := range []struct {
		parts  []string
		want   string
		wantOK bool
	}{
		{[]string{"mcpServers", "my-server.v2", "url"}, "http://127.0.0.1:9/mcp", true},
		{[]string{"llm", "model"}, "", false},
		{[]string{"llm", "apiKey"}, "", false},
	} {
		got, ok := envOverride(tc.parts, lookup)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("envOverride(%q) = %q, %v; want %q, %v", tc.parts, got, ok, tc.want, tc.wantOK)
		}
	}
}
