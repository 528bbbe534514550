package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/config/internal/problem"
)

func TestValidationErrorsNameFileAndKey(t *testing.T) {
	const sha = testSHA
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown top-level key", "mcpServer: {}\n", []string{`cfg.yaml: mcpServer: unknown key (did you mean "mcpServers"?)`}},
		{"unknown top-level key far from any", "plugins: {}\n", []string{"cfg.yaml: plugins: unknown key (valid keys: llm, mcpServers, sources, bindings, session, approvals, audit, limits, hooks, serve, permissions, pins, observability, sandbox)"}},
		{"unknown server key", "mcpServers:\n  orders: {command: x, comand: y}\n", []string{`cfg.yaml: mcpServers.orders.comand: unknown key (did you mean "command"?)`}},
		{"unknown nested key", "llm: {modle: x}\napprovals: {rules: [{id: a, decide: allow, wehn: {}}]}\n", []string{
			`cfg.yaml: llm.modle: unknown key (did you mean "model"?)`,
			`cfg.yaml: approvals.rules[0].wehn: unknown key (did you mean "when"?)`,
		}},
		{"same setting twice in different case", "llm: {model: a, MODEL: b}\n", []string{`cfg.yaml: llm.model: same setting as key "MODEL"; keep only one`}},
		{"server without command or url", "mcpServers:\n  orders: {args: [a]}\n", []string{"cfg.yaml: mcpServers.orders: set exactly one of command or url"}},
		{"server with both", "mcpServers:\n  orders: {command: x, url: 'http://127.0.0.1/'}\n", []string{"cfg.yaml: mcpServers.orders: set exactly one of command or url"}},
		{"empty server entry", "mcpServers:\n  orders:\n", []string{"cfg.yaml: mcpServers.orders: set exactly one of command or url"}},
		{"server name with dots is quoted", "mcpServers:\n  my.server: {}\n", []string{`cfg.yaml: mcpServers["my.server"]: set exactly one of command or url`}},
		{"url not http", "mcpServers:\n  t: {url: 'ftp://127.0.0.1/x'}\n", []string{"cfg.yaml: mcpServers.t.url: must be an absolute http:// or https:// URL"}},
		{"url relative", "mcpServers:\n  t: {url: '/mcp'}\n", []string{"cfg.yaml: mcpServers.t.url: must be an absolute http:// or https:// URL"}},
		{"unknown type", "mcpServers:\n  t: {url: 'http://127.0.0.1/', type: websocket}\n", []string{"cfg.yaml: mcpServers.t.type: must be stdio, http (also written streamable-http) or sse"}},
		{"stdio type with url", "mcpServers:\n  t: {url: 'http://127.0.0.1/', type: stdio}\n", []string{"cfg.yaml: mcpServers.t.type: stdio servers are started with command, not reached by url"}},
		{"sse type with command", "mcpServers:\n  t: {command: x, type: sse}\n", []string{"cfg.yaml: mcpServers.t.type: sse servers are reached by url, not started with command"}},
		{"stdio settings on url server", "mcpServers:\n  t: {url: 'http://127.0.0.1/', args: [a], env: {A: b}, cwd: d}\n", []string{
			"cfg.yaml: mcpServers.t.args: only applies to servers started with command",
			"cfg.yaml: mcpServers.t.env: only applies to servers started with command",
			"cfg.yaml: mcpServers.t.cwd: only applies to servers started with command",
		}},
		{"headers on stdio server", "mcpServers:\n  t: {command: x, headers: {A: b}}\n", []string{"cfg.yaml: mcpServers.t.headers: only applies to servers reached by url"}},
		{"bad header name", "mcpServers:\n  t: {url: 'http://127.0.0.1/', headers: {'Bad Header': b}}\n", []string{`cfg.yaml: mcpServers.t.headers["Bad Header"]: is not a valid HTTP header name`}},
		{"header value with newline", "mcpServers:\n  t: {url: 'http://127.0.0.1/', headers: {X-A: \"a\\r\\nX-B: b\"}}\n", []string{"cfg.yaml: mcpServers.t.headers.X-A: value must not contain line breaks or NUL bytes"}},
		{"bad env name", "mcpServers:\n  t: {command: x, env: {'A=B': c}}\n", []string{`cfg.yaml: mcpServers.t.env["A=B"]: is not a valid environment variable name`}},
		{"protocol version", "mcpServers:\n  t: {command: x, protocolVersion: '2024-11-05'}\n", []string{"cfg.yaml: mcpServers.t.protocolVersion: must be auto, 2025-11-25 or 2026-07-28"}},
		{"negative durations", "llm: {timeout: -1s}\nmcpServers:\n  t: {command: x, callTimeout: -5s, connectTimeout: -1m}\nsources:\n  v: {plugin: p, sha256: " + sha + ", startTimeout: -1s, callTimeout: -2s}\n", []string{
			"cfg.yaml: llm.timeout: must be positive",
			"cfg.yaml: mcpServers.t.callTimeout: must be positive",
			"cfg.yaml: mcpServers.t.connectTimeout: must be positive",
			"cfg.yaml: sources.v.startTimeout: must be positive",
			"cfg.yaml: sources.v.callTimeout: must be positive",
		}},
		{"tasks", "mcpServers:\n  t: {command: x, tasks: on, taskTimeout: 25h}\n  u: {command: x, tasks: AUTO, taskTimeout: -1s}\n", []string{
			"cfg.yaml: mcpServers.t.tasks: must be off or auto",
			"cfg.yaml: mcpServers.t.taskTimeout: must be positive and at most 24h",
			"cfg.yaml: mcpServers.u.taskTimeout: must be positive and at most 24h",
		}},
		{"bad duration syntax", "mcpServers:\n  t: {command: x, callTimeout: 10 minutes}\n", []string{`cfg.yaml: mcpServers.t.callTimeout: invalid duration; use Go syntax such as "60s", "1m30s" or "10m"`}},
		{"duration without unit", "mcpServers:\n  t: {command: x, callTimeout: 60}\n", []string{`cfg.yaml: mcpServers.t.callTimeout: expected a duration such as "60s" or "10m", got a number`}},
		{"tool globs", "mcpServers:\n  t: {command: x, tools: {allow: ['get_[', ''], deny: ['a\\']}}\n", []string{
			`cfg.yaml: mcpServers.t.tools.allow[0]: invalid glob pattern "get_[": unterminated character class (glob syntax: *, ?, [a-z], [!a-z], \ to escape)`,
			"cfg.yaml: mcpServers.t.tools.allow[1]: empty pattern",
			`cfg.yaml: mcpServers.t.tools.deny[0]: invalid glob pattern "a\\": pattern ends with a backslash (glob syntax: *, ?, [a-z], [!a-z], \ to escape)`,
		}},
		{"limits", "limits: {maxResponseBytes: 100, maxDefinitionBytes: -1, maxModelResultBytes: 1023}\n", []string{
			"cfg.yaml: limits.maxResponseBytes: must be at least 1024 bytes (0 or absent: the default)",
			"cfg.yaml: limits.maxDefinitionBytes: must be at least 1024 bytes (0 or absent: the default)",
			"cfg.yaml: limits.maxModelResultBytes: must be at least 1024 bytes (0 or absent: the default)",
		}},
		{"llm base url", "llm: {baseURL: 'localhost:8080'}\n", []string{"cfg.yaml: llm.baseURL: must be an absolute http:// or https:// URL"}},
		{"source without plugin or sha", "sources:\n  vault: {config: {a: b}}\n", []string{
			"cfg.yaml: sources.vault.plugin: is required (path of the plugin binary)",
			"cfg.yaml: sources.vault.sha256: is required (SHA-256 of the plugin binary, 64 hex digits)",
		}},
		{"source bad sha", "sources:\n  vault: {plugin: p, sha256: abc123}\n", []string{"cfg.yaml: sources.vault.sha256: must be 64 hex digits"}},
		{"empty source entry", "sources:\n  vault:\n", []string{
			"cfg.yaml: sources.vault.plugin: is required (path of the plugin binary)",
			"cfg.yaml: sources.vault.sha256: is required (SHA-256 of the plugin binary, 64 hex digits)",
		}},
		{"binding without server and params", "bindings:\n  - tools: ['*']\n", []string{
			"cfg.yaml: bindings[0].server: is required (server name or glob)",
			"cfg.yaml: bindings[0].params: is required (secure parameter name -> where its value comes from)",
		}},
		{"binding param with nothing", "bindings:\n  - server: s\n    params: {Token: {}}\n", []string{"cfg.yaml: bindings[0].params.Token: set exactly one of value, session, env, file or source"}},
		{"binding param with two kinds", "bindings:\n  - server: s\n    params: {Token: {env: A, file: ./f}}\n", []string{"cfg.yaml: bindings[0].params.Token: set exactly one of value, session, env, file or source (found env and file)"}},
		{"ref without source", "bindings:\n  - server: s\n    params: {Token: {env: A, ref: x}}\n", []string{"cfg.yaml: bindings[0].params.Token.ref: is only used with source"}},
		{"source without ref", "sources:\n  vault: {plugin: p, sha256: " + sha + "}\nbindings:\n  - server: s\n    params: {Token: {source: vault}}\n", []string{"cfg.yaml: bindings[0].params.Token.ref: is required with source (the reference passed to the source)"}},
		{"sensitivity", "bindings:\n  - server: s\n    params: {Token: {env: A, sensitivity: top-secret}}\n", []string{"cfg.yaml: bindings[0].params.Token.sensitivity: must be public, internal or secret"}},
		{"binding globs", "bindings:\n  - server: 'a['\n    tools: ['[']\n    params: {T: {env: A}}\n", []string{
			`cfg.yaml: bindings[0].server: invalid glob pattern "a[": unterminated character class (glob syntax: *, ?, [a-z], [!a-z], \ to escape)`,
			`cfg.yaml: bindings[0].tools[0]: invalid glob pattern "[": unterminated character class (glob syntax: *, ?, [a-z], [!a-z], \ to escape)`,
		}},
		{"trust level too high", "session: {trustLevel: 6}\n", []string{"cfg.yaml: session.trustLevel: must be between 1 and 5"}},
		{"trust level negative", "session: {trustLevel: -1}\n", []string{"cfg.yaml: session.trustLevel: must be between 1 and 5"}},
		{"wrong types", "session: {trustLevel: two}\nmcpServers:\n  t: {command: [a], args: a, disabled: 'yes', env: {PI: 3.14}}\nbindings: {server: s}\n", []string{
			"cfg.yaml: bindings: expected a list, got a mapping",
			"cfg.yaml: mcpServers.t.args: expected a list, got a string",
			"cfg.yaml: mcpServers.t.command: expected a string, got a list",
			"cfg.yaml: mcpServers.t.disabled: expected true or false, got a string",
			"cfg.yaml: mcpServers.t.env.PI: expected a string, got a number; put the value in quotes",
			"cfg.yaml: session.trustLevel: expected an integer, got a string",
		}},
		{"fractional trust level", "session: {trustLevel: 2.5}\n", []string{"cfg.yaml: session.trustLevel: expected an integer, got a number"}},
		{"server entry not a mapping", "mcpServers:\n  t: ./bin/server\n", []string{"cfg.yaml: mcpServers.t: expected a mapping, got a string"}},
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

func TestIntegersAndBooleansBecomeStrings(t *testing.T) {
	cfg, err := Parse([]byte("mcpServers:\n  t: {command: x, args: [--port, 8080, --debug, true], env: {PORT: 8080}}\n"), "yaml", "cfg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.MCPServers["t"].Args, " "); got != "--port 8080 --debug true" {
		t.Errorf("args = %q", got)
	}
	if got := cfg.MCPServers["t"].Env["PORT"]; got != "8080" {
		t.Errorf("env PORT = %q", got)
	}
}

func TestValidateConfigBuiltInGo(t *testing.T) {
	valid := &Config{
		MCPServers: map[string]*Server{
			"orders": {Command: "./orders"},
			"remote": {URL: "https://127.0.0.1:8443/mcp", Type: "streamable-http"},
		},
		Sources:  map[string]*Source{"vault": {Plugin: "./p", SHA256: testSHA}},
		Bindings: []Binding{{Server: "orders", Params: map[string]ParamBinding{"token": {Source: "vault", Ref: "r"}}}},
	}
	if err := valid.Validate(); err != nil {
		t.Fatalf("Validate before ApplyDefaults: %v", err)
	}
	valid.ApplyDefaults()
	if err := valid.Validate(); err != nil {
		t.Fatalf("Validate after ApplyDefaults: %v", err)
	}
	if s := valid.MCPServers["remote"]; s.Name != "remote" || s.Type != TransportHTTP || s.CallTimeout != DefaultCallTimeout {
		t.Errorf("ApplyDefaults: %+v", s)
	}

	invalid := &Config{
		MCPServers: map[string]*Server{"orders": {}},
		Session:    SessionDefaults{TrustLevel: 7},
		LLM:        LLM{Timeout: -time.Second},
	}
	err := invalid.Validate()
	requireLines(t, err,
		"llm.timeout: must be positive",
		"mcpServers.orders: set exactly one of command or url",
		"session.trustLevel: must be between 1 and 5",
	)
	invalid.File = "built.yaml"
	requireLines(t, invalid.Validate(), "built.yaml: mcpServers.orders: set exactly one of command or url")
}

// approvalsErrors returns a fixed error from Validate, standing in for
// rules.Config to test how its errors are filed.
type approvalsErrors struct{ err error }

func (a approvalsErrors) Validate() error { return a.err }

func TestApprovalsErrorsAreFiledUnderApprovals(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"no problem", nil, nil},
		{"field error", &risk.FieldError{Key: "rules[2].decide", Msg: "required"}, []string{"cfg.yaml: approvals.rules[2].decide: required"}},
		{"plain error", errors.New("catalogue and rules disagree"), []string{"cfg.yaml: approvals: catalogue and rules disagree"}},
		{"joined", errors.Join(
			&risk.FieldError{Key: "unclassified", Msg: "want strict or infer"},
			errors.Join(&risk.FieldError{Key: "rules[0].id", Msg: "duplicate"}),
		), []string{
			"cfg.yaml: approvals.unclassified: want strict or infer",
			"cfg.yaml: approvals.rules[0].id: duplicate",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &problem.List{File: "cfg.yaml"}
			validateApprovals(p, approvalsErrors{err: tc.err})
			err := p.Err()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			requireLines(t, err, tc.want...)
			if len(errorLines(t, err)) != len(tc.want) {
				t.Errorf("problem count: %v", err)
			}
			if !errors.Is(err, problem.Leaves(tc.err)[0]) {
				t.Errorf("the approvals error is not kept as the cause: %v", err)
			}
		})
	}
}

func TestApprovalsSectionIsValidated(t *testing.T) {
	doc := "approvals:\n  noMatch: maybe\n  rules:\n    - {id: r1, when: {category: [read]}}\n"
	_, err := Parse([]byte(doc), "yaml", "cfg.yaml")
	lines := errorLines(t, err)
	for _, prefix := range []string{"cfg.yaml: approvals.noMatch: ", "cfg.yaml: approvals.rules[0].decide: "} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, prefix)
		}
		if !found {
			t.Errorf("no line starting %q in:\n%v", prefix, err)
		}
	}
}

// TestCheckSources: a binding may name a source the program supplies in Go
// (host.Options.Sources), which Parse cannot know of; CheckSources, given
// those names, reports only the sources nobody provides, naming file and
// key.
func TestCheckSources(t *testing.T) {
	doc := "sources:\n  vault: {plugin: ./p, sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}\nbindings:\n  - server: s\n    params: {Token: {source: tenant-tokens, ref: r}, Key: {source: vault, ref: k}, Other: {source: Nowhere, ref: x}}\n"
	cfg, err := Parse([]byte(doc), "yaml", "cfg.yaml")
	if err != nil {
		t.Fatalf("Parse refused a source it cannot know of: %v", err)
	}
	for _, tc := range []struct {
		given []string
		want  []string
	}{
		{nil, []string{
			`cfg.yaml: bindings[0].params.Other.source: names source "Nowhere", which is not configured under sources nor supplied by the program`,
			`cfg.yaml: bindings[0].params.Token.source: names source "tenant-tokens", which is not configured under sources nor supplied by the program`,
		}},
		{[]string{"tenant-tokens"}, []string{
			`cfg.yaml: bindings[0].params.Other.source: names source "Nowhere", which is not configured under sources nor supplied by the program`,
		}},
	} {
		err := cfg.CheckSources(tc.given...)
		requireLines(t, err, tc.want...)
		if got := len(errorLines(t, err)); got != len(tc.want) {
			t.Errorf("given %v: %d problems, want %d:\n%v", tc.given, got, len(tc.want), err)
		}
		if !errors.Is(err, ErrConfig) {
			t.Errorf("given %v: not a config error: %v", tc.given, err)
		}
	}
	if err := cfg.CheckSources("tenant-tokens", "Nowhere"); err != nil {
		t.Errorf("every source supplied: %v", err)
	}
}
