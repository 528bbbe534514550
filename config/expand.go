package config

import (
	"errors"
	"fmt"
	"strings"
)

// UnsetVariableError reports a ${VAR} reference to an unset variable that
// has no default. It carries the variable's name only.
type UnsetVariableError struct {
	Name string
}

func (e *UnsetVariableError) Error() string {
	return "environment variable " + e.Name + " is not set"
}

// MaxReferenceDepth bounds how deeply ${VAR:-default} references nest
// (${A:-${B:-...}}). Each level rescans its own default once, so the
// bound also keeps expansion linear in the length of the string.
const MaxReferenceDepth = 32

// expandString replaces ${VAR} and ${VAR:-default} references and turns
// $$ into $. A substituted value is inserted as it is, never scanned again.
// Errors name variables but never the string or any value.
func expandString(s string, lookup func(string) (string, bool)) (string, error) {
	return expandAt(s, lookup, 0)
}

// expandAt expands s, found inside level enclosing references.
func expandAt(s string, lookup func(string) (string, bool), level int) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end, err := closingBrace(s, i+2, MaxReferenceDepth-level-1)
			if err != nil {
				return "", err
			}
			value, err := resolveReference(s[i+2:end], lookup, level+1)
			if err != nil {
				return "", err
			}
			b.WriteString(value)
			i = end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), nil
}

// errTooDeep reports references nested beyond MaxReferenceDepth.
var errTooDeep = fmt.Errorf("${...} references nested more than %d deep", MaxReferenceDepth)

// closingBrace finds the } that ends a reference starting at from, allowing
// nested references (at most room more levels) and $$ in a default.
func closingBrace(s string, from, room int) (int, error) {
	depth := 0
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '$':
			j++
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '{':
			depth++
			if depth > room {
				return 0, errTooDeep
			}
			j++
		case s[j] == '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, errors.New("unterminated ${ reference (missing })")
}

// resolveReference resolves the reference text ref (between ${ and }),
// which is the level-th nested reference.
func resolveReference(ref string, lookup func(string) (string, bool), level int) (string, error) {
	name, fallback, hasDefault := strings.Cut(ref, ":-")
	if !validVariableName(name) {
		// The text may be a mistyped secret, so it is not shown.
		return "", errors.New("invalid ${...} reference: expected ${NAME} or ${NAME:-default} with NAME made of letters, digits and _")
	}
	value, set := lookup(name)
	if set && (value != "" || !hasDefault) {
		return value, nil
	}
	if !hasDefault {
		return "", &UnsetVariableError{Name: name}
	}
	expanded, err := expandAt(fallback, lookup, level)
	if err != nil {
		return "", fmt.Errorf("in the default for %s: %w", name, err)
	}
	return expanded, nil
}

func validVariableName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// expandConfig expands the settings that allow ${VAR}. Keys in skip came
// from AGENTHOST_* overrides and are taken literally. Disabled servers are
// left alone so a switched-off server needs none of its variables.
func expandConfig(cfg *Config, lookup func(string) (string, bool), skip map[string]bool, p *problems) {
	field := func(key string, s *string) {
		if skip[key] {
			return
		}
		v, err := expandString(*s, lookup)
		if err != nil {
			p.list = append(p.list, &Error{File: p.file, Key: key, Msg: err.Error(), Err: err})
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

	for _, name := range sortedKeys(cfg.MCPServers) {
		srv := cfg.MCPServers[name]
		if srv == nil || srv.Disabled {
			continue
		}
		key := childKey("mcpServers", name)
		field(childKey(key, "command"), &srv.Command)
		for i := range srv.Args {
			field(indexKey(childKey(key, "args"), i), &srv.Args[i])
		}
		expandMapValues(childKey(key, "env"), srv.Env, field)
		field(childKey(key, "cwd"), &srv.Cwd)
		if srv.Sandbox != nil {
			expandSandbox(childKey(key, "sandbox"), srv.Sandbox, field)
		}
		field(childKey(key, "url"), &srv.URL)
		expandMapValues(childKey(key, "headers"), srv.Headers, field)
		if o := srv.OAuth; o != nil {
			okey := childKey(key, "oauth")
			field(childKey(okey, "clientId"), &o.ClientID)
			field(childKey(okey, "clientSecret"), &o.ClientSecret)
			field(childKey(okey, "clientMetadataUrl"), &o.ClientMetadataURL)
			field(childKey(okey, "privateKey"), &o.PrivateKey)
			field(childKey(okey, "privateKeyFile"), &o.PrivateKeyFile)
			field(childKey(okey, "idpTokenEndpoint"), &o.IDPTokenEndpoint)
			field(childKey(okey, "idpClientId"), &o.IDPClientID)
			field(childKey(okey, "idpClientSecret"), &o.IDPClientSecret)
			field(childKey(okey, "idToken"), &o.IDToken)
			field(childKey(okey, "idTokenFile"), &o.IDTokenFile)
			field(childKey(okey, "assertionFile"), &o.AssertionFile)
			field(childKey(okey, "assertionCommand"), &o.AssertionCommand)
		}
	}
	cfg.expandServe(field)
	expandSandbox("sandbox", &cfg.Sandbox, field)
	hookSandboxes(&cfg.Hooks, func(key string, sb *Sandbox) { expandSandbox(key, sb, field) })
	for _, name := range sortedKeys(cfg.Sources) {
		if src := cfg.Sources[name]; src != nil && src.Sandbox != nil {
			expandSandbox(childKey(childKey("sources", name), "sandbox"), src.Sandbox, field)
		}
	}
	field("observability.endpoint", &cfg.Observability.Endpoint)
	expandMapValues("observability.headers", cfg.Observability.Headers, field)
}

func expandMapValues(key string, m map[string]string, field func(string, *string)) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		field(childKey(key, k), &v)
		m[k] = v
	}
}

// expandSandbox expands the paths and destinations of a sandbox block.
func expandSandbox(key string, s *Sandbox, field func(string, *string)) {
	fkey := childKey(key, "filesystem")
	for i := range s.Filesystem.Read {
		field(indexKey(childKey(fkey, "read"), i), &s.Filesystem.Read[i])
	}
	for i := range s.Filesystem.Write {
		field(indexKey(childKey(fkey, "write"), i), &s.Filesystem.Write[i])
	}
	for i := range s.Connect {
		field(indexKey(childKey(key, "connect"), i), &s.Connect[i])
	}
}
