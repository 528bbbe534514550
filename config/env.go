package config

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
)

// EnvPrefix starts the name of every environment override.
const EnvPrefix = "AGENTHOST"

// scalarSetting is one setting an environment variable can override.
type scalarSetting struct {
	key   string   // key path as shown in errors: mcpServers["a.b"].url
	parts []string // the path's parts as written: mcpServers, a.b, url
	value reflect.Value
}

// EnvName returns the environment variable that overrides the setting with
// the given key path parts, e.g. EnvName("llm", "baseURL") is
// "AGENTHOST_LLM_BASEURL" and EnvName("mcpServers", "my-server", "url") is
// "AGENTHOST_MCPSERVERS_MY_SERVER_URL".
func EnvName(parts ...string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.Join(envParts(parts), "_"))
}

// envParts maps each part to the characters allowed in variable names.
func envParts(parts []string) []string {
	out := make([]string, len(parts))
	for i, part := range parts {
		out[i] = strings.Map(func(r rune) rune {
			if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, part)
	}
	return out
}

// scalarSettings lists every scalar setting reachable from v: the fields of
// nested structs and of the entries of name-keyed maps of structs
// (mcpServers, sources). Lists and other maps are not scalar settings.
func scalarSettings(v reflect.Value, key string, parts []string, out []scalarSetting) []scalarSetting {
	for _, f := range document.Fields(v.Type()) {
		fv := v.Field(f.Index)
		fkey := problem.Key(key, f.Name)
		fparts := append(parts[:len(parts):len(parts)], f.Name)
		switch t := fv.Type(); {
		case isScalar(t):
			out = append(out, scalarSetting{key: fkey, parts: fparts, value: fv})
		case t.Kind() == reflect.Struct:
			out = scalarSettings(fv, fkey, fparts, out)
		case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String &&
			t.Elem().Kind() == reflect.Pointer && t.Elem().Elem().Kind() == reflect.Struct:
			for _, name := range sortedMapKeys(fv) {
				entry := fv.MapIndex(reflect.ValueOf(name))
				if entry.IsNil() {
					continue
				}
				out = scalarSettings(entry.Elem(), problem.Key(fkey, name), append(fparts[:len(fparts):len(fparts)], name), out)
			}
		}
	}
	return out
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func sortedMapKeys(m reflect.Value) []string {
	keys := make(map[string]struct{}, m.Len())
	for _, k := range m.MapKeys() {
		keys[k.String()] = struct{}{}
	}
	return problem.SortedKeys(keys)
}

// envOverride is the value of the setting's AGENTHOST_* variable (EnvName
// of its parts), and whether it is set; an empty variable counts as unset.
func envOverride(parts []string, lookup func(string) (string, bool)) (string, bool) {
	v, ok := lookup(EnvName(parts...))
	return v, ok && v != ""
}

// applyEnvOverrides sets every scalar setting whose AGENTHOST_* variable is
// set and returns the keys it set, which are then not ${VAR}-expanded.
func applyEnvOverrides(cfg *Config, p *problem.List) map[string]bool {
	overridden := make(map[string]bool)
	for _, s := range scalarSettings(reflect.ValueOf(cfg).Elem(), "", nil, nil) {
		raw, ok := envOverride(s.parts, os.LookupEnv)
		if !ok {
			continue
		}
		if msg := setScalar(s.value, raw); msg != "" {
			p.Addf(s.key, "%s %s", EnvName(s.parts...), msg)
			continue
		}
		overridden[s.key] = true
	}
	return overridden
}

// setScalar converts an override's text for the field's type. The message
// it returns on failure does not contain the text.
func setScalar(v reflect.Value, text string) string {
	switch {
	case v.Type() == document.DurationType:
		d, err := time.ParseDuration(strings.TrimSpace(text))
		if err != nil {
			return `is not a duration (use Go syntax such as "60s" or "10m")`
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(text)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return "is not true or false"
		}
		v.SetBool(b)
	default: // integer kinds, see isScalar
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil || v.OverflowInt(n) {
			return "is not an integer"
		}
		v.SetInt(n)
	}
	return ""
}

// The variables OpenAI's own clients read, which a model setting left
// empty by the file and by AGENTHOST_* falls back to (docs/config.md).
const (
	EnvOpenAIAPIKey  = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
)

// applyConventionalEnv fills llm.apiKey and llm.baseURL, when neither the
// file nor an AGENTHOST_* override set them, from OPENAI_API_KEY and
// OPENAI_BASE_URL: a user whose shell is set up for OpenAI's tools needs
// no configuration file to run a turn. An empty variable counts as unset.
func applyConventionalEnv(cfg *Config, lookup func(string) (string, bool)) {
	fill := func(field *string, name string) {
		if *field != "" {
			return
		}
		if v, ok := lookup(name); ok && v != "" {
			*field = v
		}
	}
	fill(&cfg.LLM.APIKey, EnvOpenAIAPIKey)
	fill(&cfg.LLM.BaseURL, EnvOpenAIBaseURL)
}
