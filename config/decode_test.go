package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeShapes(t *testing.T) {
	tests := []struct {
		name    string
		format  string
		doc     string
		check   func(*Config) any // returns the part to compare
		want    any
		wantErr string
	}{
		{
			name: "numeric YAML keys become names", format: FormatYAML,
			doc:   "mcpServers:\n  123: {command: x}\n  true: {command: y}\n",
			check: func(c *Config) any { return []string{c.MCPServers["123"].Name, c.MCPServers["true"].Command} },
			want:  []string{"123", "y"},
		},
		{
			name: "source config keeps types and case in JSON", format: FormatJSON,
			doc: `{"sources": {"V": {"plugin": "p", "sha256": "` + testSHA + `",
			       "config": {"List": [1, "a", true, null, 2.5], "Big": 9007199254740993, "Obj": {"K": {}}}}}}`,
			check: func(c *Config) any { return c.Sources["V"].Config },
			want: map[string]any{
				"List": []any{int64(1), "a", true, nil, 2.5},
				"Big":  int64(9007199254740993), // beyond float64 precision: kept exact
				"Obj":  map[string]any{"K": map[string]any{}},
			},
		},
		{
			name: "literal values of any type count as set", format: FormatYAML,
			doc: "bindings:\n  - server: s\n    params: {A: {value: false}, B: {value: 0}, C: {value: ''}, D: {value: {k: [1]}}}\n",
			check: func(c *Config) any {
				p := c.Bindings[0].Params
				return []any{p["A"].Value, p["B"].Value, p["C"].Value, p["D"].Value}
			},
			want: []any{false, int64(0), "", map[string]any{"k": []any{int64(1)}}},
		},
		{
			name: "integral JSON float for an integer", format: FormatJSON,
			doc:   `{"session": {"trustLevel": 2.0}}`,
			check: func(c *Config) any { return c.Session.TrustLevel },
			want:  2,
		},
		{
			name: "field names match case-insensitively", format: FormatTOML,
			doc: "[LLM]\nBaseUrl = 'http://127.0.0.1:1/'\n[McpServers.Srv]\nCOMMAND = 'x'\nCallTimeout = '2s'\n",
			check: func(c *Config) any {
				return []any{c.LLM.BaseURL, c.MCPServers["Srv"].Command, c.MCPServers["Srv"].CallTimeout.String()}
			},
			want: []any{"http://127.0.0.1:1/", "x", "2s"},
		},
		{
			name: "null sections are empty", format: FormatYAML,
			doc:   "llm:\nmcpServers:\nbindings:\n",
			check: func(c *Config) any { return []any{c.LLM.Model, len(c.MCPServers), len(c.Bindings)} },
			want:  []any{"", 0, 0},
		},
		{name: "TOML date for a string", format: FormatTOML, doc: "[llm]\nmodel = 1979-05-27\n", wantErr: "cfg: llm.model: expected a string, got a date or time"},
		{name: "list for a map", format: FormatYAML, doc: "mcpServers: [a]\n", wantErr: "cfg: mcpServers: expected a mapping, got a list"},
		{name: "scalar for a section", format: FormatJSON, doc: `{"llm": "gpt"}`, wantErr: "cfg: llm: expected a mapping, got a string"},
		{name: "number too large", format: FormatJSON, doc: `{"session": {"trustLevel": 1e400}}`, wantErr: "cfg: number out of range"},
		{name: "integer overflow", format: FormatYAML, doc: "session: {trustLevel: 1e30}\n", wantErr: "cfg: session.trustLevel: expected an integer, got a number"},
		{name: "string for a boolean", format: FormatTOML, doc: "[mcpServers.s]\ncommand = 'x'\ntrustAnnotations = 'true'\n", wantErr: "cfg: mcpServers.s.trustAnnotations: expected true or false, got a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc), tc.format, "cfg")
			if tc.wantErr != "" {
				requireLines(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.check(cfg)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A YAML syntax error names the line it is on, counted from 1: yaml.v3
// names the line before it for its parser's errors and none on line 1.
func TestYAMLSyntaxErrorLine(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unclosed flow sequence", "llm:\n  model: [1\n  baseURL: x\n", "line 2: did not find expected ',' or ']'"},
		{"unclosed flow mapping, at the end of the file", "llm: {model: x\n", "line 2: did not find expected ',' or '}'"},
		{"key out of indentation", "llm:\n  model: x\n baseURL: y\n", "line 3: did not find expected key"},
		{"list item in a mapping", "llm: {}\n- x\n", "line 2: did not find expected key"},
		{"mapping value on line 1", "llm: model: x\n", "line 1: mapping values are not allowed in this context"},
		{"mapping value later", "llm:\n  model: x: y\n", "line 2: mapping values are not allowed in this context"},
		{"tab indentation", "llm: {}\n\tbaseURL: y\n", "line 2: found character that cannot start any token"},
		{"after a comment header", "# agenthost\n\n# servers\nmcpServers:\n  a:\n    command: x\n    args: [1\n    env: {}\n", "line 7: did not find expected ',' or ']'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), FormatYAML, "cfg.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			if want := "cfg.yaml: cannot parse YAML: yaml: " + tc.want; err.Error() != want {
				t.Errorf("error\n%s\nwant\n%s", err, want)
			}
		})
	}
}
