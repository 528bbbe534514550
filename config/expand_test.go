package config

import (
	"errors"
	"strings"
	"testing"
)

func TestExpansionInConfig(t *testing.T) {
	isolateEnv(t)
	t.Setenv("T_HOST", "127.0.0.1")
	t.Setenv("T_TOKEN", "tok")
	t.Setenv("T_MODEL", "m1")
	t.Setenv("T_BIN", "./bin")
	unsetEnv(t, "T_BASE", "T_DIR", "NOT_EXPANDED")
	doc := `
llm:
  baseURL: ${T_BASE:-http://${T_HOST}:8080/v1}
  apiKey: ${T_TOKEN}
  model: ${T_MODEL}
mcpServers:
  local:
    command: ${T_BIN}/server
    args: ["--host", "${T_HOST}", "--price", "$$5"]
    env: {Token: "${T_TOKEN}", Literal: "a$$b"}
    cwd: ${T_DIR:-./work}
  remote:
    url: http://${T_HOST}:5000/mcp
    headers: {Authorization: "Bearer ${T_TOKEN}"}
bindings:
  - server: local
    params: {p: {value: "${NOT_EXPANDED}"}}
`
	cfg, err := Parse([]byte(doc), "yaml", "agenthost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	local, remote := cfg.MCPServers["local"], cfg.MCPServers["remote"]
	checks := []struct{ name, got, want string }{
		{"llm.baseURL", cfg.LLM.BaseURL, "http://127.0.0.1:8080/v1"},
		{"llm.apiKey", cfg.LLM.APIKey, "tok"},
		{"llm.model", cfg.LLM.Model, "m1"},
		{"command", local.Command, "./bin/server"},
		{"args", strings.Join(local.Args, " "), "--host 127.0.0.1 --price $5"},
		{"env.Token", local.Env["Token"], "tok"},
		{"env.Literal", local.Env["Literal"], "a$b"},
		{"cwd", local.Cwd, "./work"},
		{"url", remote.URL, "http://127.0.0.1:5000/mcp"},
		{"headers", remote.Headers["Authorization"], "Bearer tok"},
		{"binding values are not expanded", cfg.Bindings[0].Params["p"].Value.(string), "${NOT_EXPANDED}"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestUnsetVariableNamesVariableAndKey(t *testing.T) {
	isolateEnv(t)
	docs := map[string]string{
		FormatYAML: "mcpServers:\n  toolbox:\n    url: http://127.0.0.1:5000/mcp\n    headers: {Authorization: \"Bearer ${TOOLBOX_TOKEN}\"}\n",
		FormatJSON: `{"mcpServers": {"toolbox": {"url": "http://127.0.0.1:5000/mcp", "headers": {"Authorization": "Bearer ${TOOLBOX_TOKEN}"}}}}`,
		FormatTOML: "[mcpServers.toolbox]\nurl = 'http://127.0.0.1:5000/mcp'\nheaders = { Authorization = 'Bearer ${TOOLBOX_TOKEN}' }\n",
	}
	for format, doc := range docs {
		t.Run(format, func(t *testing.T) {
			unsetEnv(t, "TOOLBOX_TOKEN")
			_, err := Parse([]byte(doc), format, "agenthost."+format)
			requireLines(t, err, "agenthost."+format+": mcpServers.toolbox.headers.Authorization: environment variable TOOLBOX_TOKEN is not set")
			var unset *UnsetVariableError
			if !errors.As(err, &unset) || unset.Name != "TOOLBOX_TOKEN" {
				t.Errorf("errors.As(*UnsetVariableError) = %v, %+v", err, unset)
			}
		})
	}
}

func TestEveryUnsetVariableIsReported(t *testing.T) {
	isolateEnv(t)
	unsetEnv(t, "U_KEY", "U_CMD", "U_ARG", "U_ENV", "U_CWD", "U_URL", "U_HDR")
	doc := `
llm: {apiKey: "${U_KEY}"}
mcpServers:
  a: {command: "${U_CMD}", args: ["${U_ARG}"], env: {X: "${U_ENV}"}, cwd: "${U_CWD}"}
  b: {url: "${U_URL}", headers: {H: "${U_HDR}"}}
`
	_, err := Parse([]byte(doc), "yaml", "cfg.yaml")
	requireLines(t, err,
		"cfg.yaml: llm.apiKey: environment variable U_KEY is not set",
		"cfg.yaml: mcpServers.a.command: environment variable U_CMD is not set",
		"cfg.yaml: mcpServers.a.args[0]: environment variable U_ARG is not set",
		"cfg.yaml: mcpServers.a.env.X: environment variable U_ENV is not set",
		"cfg.yaml: mcpServers.a.cwd: environment variable U_CWD is not set",
		"cfg.yaml: mcpServers.b.url: environment variable U_URL is not set",
		"cfg.yaml: mcpServers.b.headers.H: environment variable U_HDR is not set",
	)
}

func TestDisabledServerIsNotExpanded(t *testing.T) {
	isolateEnv(t)
	unsetEnv(t, "OFF_HOST", "OFF_TOKEN")
	doc := "mcpServers:\n  off:\n    url: http://${OFF_HOST}/mcp\n    headers: {Authorization: 'Bearer ${OFF_TOKEN}'}\n    disabled: true\n"
	cfg, err := Parse([]byte(doc), "yaml", "cfg.yaml")
	if err != nil {
		t.Fatalf("a disabled server must not need its variables: %v", err)
	}
	if got := cfg.MCPServers["off"].Headers["Authorization"]; got != "Bearer ${OFF_TOKEN}" {
		t.Errorf("header = %q, want it unexpanded", got)
	}
	// Switched on, the same file needs the variables.
	_, err = Parse([]byte(strings.Replace(doc, "disabled: true", "disabled: false", 1)), "yaml", "cfg.yaml")
	requireLines(t, err, "cfg.yaml: mcpServers.off.url: environment variable OFF_HOST is not set")
}
