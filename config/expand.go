package config

import (
	"github.com/agenthost/agenthost/config/internal/expand"
	"github.com/agenthost/agenthost/config/internal/problem"
)

// UnsetVariableError reports a ${VAR} reference to an unset variable that
// has no default. It carries the variable's name only.
type UnsetVariableError = expand.UnsetVariableError

// MaxReferenceDepth bounds how deeply ${VAR:-default} references nest
// (${A:-${B:-...}}).
const MaxReferenceDepth = expand.MaxReferenceDepth

// expandConfig expands the settings that allow ${VAR}. Keys in skip came
// from AGENTHOST_* overrides and are taken literally. Disabled servers are
// left alone so a switched-off server needs none of its variables.
func expandConfig(cfg *Config, lookup func(string) (string, bool), skip map[string]bool, p *problem.List) {
	field := func(key string, s *string) {
		if skip[key] {
			return
		}
		v, err := expand.String(*s, lookup)
		if err != nil {
			p.AddCause(key, err.Error(), err)
			return
		}
		*s = v
	}
	field("llm.baseURL", &cfg.LLM.BaseURL)
	field("llm.apiKey", &cfg.LLM.APIKey)
	field("llm.model", &cfg.LLM.Model)
	field("llm.systemPrompt", &cfg.LLM.SystemPrompt)
	field("approvals.store", &cfg.Approvals.Store)
	field("audit.store", &cfg.Audit.Store)

	for _, name := range problem.SortedKeys(cfg.MCPServers) {
		srv := cfg.MCPServers[name]
		if srv == nil || srv.Disabled {
			continue
		}
		key := problem.Key("mcpServers", name)
		field(problem.Key(key, "command"), &srv.Command)
		for i := range srv.Args {
			field(problem.Index(problem.Key(key, "args"), i), &srv.Args[i])
		}
		expandMapValues(problem.Key(key, "env"), srv.Env, field)
		field(problem.Key(key, "cwd"), &srv.Cwd)
		if srv.Sandbox != nil {
			expandSandbox(problem.Key(key, "sandbox"), srv.Sandbox, field)
		}
		field(problem.Key(key, "url"), &srv.URL)
		expandMapValues(problem.Key(key, "headers"), srv.Headers, field)
		if o := srv.OAuth; o != nil {
			okey := problem.Key(key, "oauth")
			field(problem.Key(okey, "clientId"), &o.ClientID)
			field(problem.Key(okey, "clientSecret"), &o.ClientSecret)
			field(problem.Key(okey, "clientMetadataUrl"), &o.ClientMetadataURL)
			field(problem.Key(okey, "privateKey"), &o.PrivateKey)
			field(problem.Key(okey, "privateKeyFile"), &o.PrivateKeyFile)
			field(problem.Key(okey, "idpTokenEndpoint"), &o.IDPTokenEndpoint)
			field(problem.Key(okey, "idpClientId"), &o.IDPClientID)
			field(problem.Key(okey, "idpClientSecret"), &o.IDPClientSecret)
			field(problem.Key(okey, "idToken"), &o.IDToken)
			field(problem.Key(okey, "idTokenFile"), &o.IDTokenFile)
			field(problem.Key(okey, "assertionFile"), &o.AssertionFile)
			field(problem.Key(okey, "assertionCommand"), &o.AssertionCommand)
		}
	}
	cfg.expandServe(field)
	expandSandbox("sandbox", &cfg.Sandbox, field)
	hookSandboxes(&cfg.Hooks, func(key string, sb *Sandbox) { expandSandbox(key, sb, field) })
	for _, name := range problem.SortedKeys(cfg.Sources) {
		if src := cfg.Sources[name]; src != nil && src.Sandbox != nil {
			expandSandbox(problem.Key(problem.Key("sources", name), "sandbox"), src.Sandbox, field)
		}
	}
	field("observability.endpoint", &cfg.Observability.Endpoint)
	expandMapValues("observability.headers", cfg.Observability.Headers, field)
}

func expandMapValues(key string, m map[string]string, field func(string, *string)) {
	for _, k := range problem.SortedKeys(m) {
		v := m[k]
		field(problem.Key(key, k), &v)
		m[k] = v
	}
}

// expandSandbox expands the paths and destinations of a sandbox block.
func expandSandbox(key string, s *Sandbox, field func(string, *string)) {
	fkey := problem.Key(key, "filesystem")
	for i := range s.Filesystem.Read {
		field(problem.Index(problem.Key(fkey, "read"), i), &s.Filesystem.Read[i])
	}
	for i := range s.Filesystem.Write {
		field(problem.Index(problem.Key(fkey, "write"), i), &s.Filesystem.Write[i])
	}
	for i := range s.Connect {
		field(problem.Index(problem.Key(key, "connect"), i), &s.Connect[i])
	}
}
