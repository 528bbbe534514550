package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AddServer and RemoveServer edit mcpServers of a YAML or JSON file, keep
// the rest (YAML comments, JSON bytes), refuse what would not load or is
// there already, and leave the file untouched when they refuse.
func TestEditServers(t *testing.T) {
	stdio := ServerEntry{Command: "npx", Args: []string{"-y", "server"}, Env: map[string]string{"TOKEN": "${TOKEN:-x}"}}
	web := ServerEntry{Type: TransportHTTP, URL: "https://mcp.example.com/mcp?a=1&b=2", Headers: map[string]string{"Authorization": "Bearer t"}}
	for _, tc := range []struct {
		name, file, before string
		edit               func(path string) error
		wantErr            error    // nil: success
		want               []string // substrings of the file after
		wantNot            []string
	}{
		{name: "yaml: add keeps comments", file: "agenthost.yaml",
			before: "# top comment\nllm:\n  model: m # the model\nmcpServers:\n  a:\n    command: echo # kept\n",
			edit:   func(p string) error { return AddServer(p, "b", stdio) },
			want:   []string{"# top comment", "# the model", "command: echo # kept", "  b:\n    command: npx\n    args:\n      - -y\n      - server\n    env:\n      TOKEN: ${TOKEN:-x}\n"}},
		{name: "yaml: add to a file without servers", file: "agenthost.yaml", before: "llm: {model: m}\n",
			edit: func(p string) error { return AddServer(p, "web", web) },
			want: []string{"mcpServers:\n  web:\n    type: http\n    url: https://mcp.example.com/mcp?a=1&b=2\n"}},
		{name: "yaml: create the file", file: "new.yaml",
			edit: func(p string) error { return AddServer(p, "b", stdio) },
			want: []string{"mcpServers:\n  b:\n"}},
		{name: "yaml: four-space indentation is kept", file: "agenthost.yaml", before: "mcpServers:\n    a:\n        command: echo\n",
			edit: func(p string) error { return AddServer(p, "b", stdio) },
			want: []string{"    a:\n        command: echo\n    b:\n        command: npx\n"}},
		{name: "yaml: remove", file: "agenthost.yaml", before: "# c\nmcpServers:\n  a:\n    command: echo\n  b:\n    command: cat\n",
			edit: func(p string) error { return RemoveServer(p, "a") },
			want: []string{"# c", "  b:\n    command: cat\n"}, wantNot: []string{"echo"}},
		{name: "yaml: a name there already", file: "agenthost.yaml", before: "mcpServers:\n  b:\n    command: echo\n",
			edit: func(p string) error { return AddServer(p, "b", stdio) }, wantErr: ErrServerExists},
		{name: "yaml: remove what is not there", file: "agenthost.yaml", before: "mcpServers:\n  b:\n    command: echo\n",
			edit: func(p string) error { return RemoveServer(p, "a") }, wantErr: ErrNoSuchServer},
		{name: "yaml: an entry that would not load", file: "agenthost.yaml", before: "mcpServers: {}\n",
			edit:    func(p string) error { return AddServer(p, "x", ServerEntry{Type: TransportHTTP, URL: "ftp://x"}) },
			wantErr: ErrConfig},
		{name: "json: add keeps every other byte", file: "c.json", before: "{\n  \"llm\":   {\"model\": \"m\"},\n  \"mcpServers\": {\n    \"a\": {\"command\": \"echo\"}\n  }\n}\n",
			edit: func(p string) error { return AddServer(p, "web", web) },
			want: []string{"{\n  \"llm\":   {\"model\": \"m\"},\n  \"mcpServers\": {\n    \"a\": {\"command\": \"echo\"},\n    \"web\": {", "\"url\": \"https://mcp.example.com/mcp?a=1&b=2\""}},
		{name: "json: remove the first of two", file: "c.json", before: "{\"mcpServers\": {\"a\": {\"command\": \"echo\"}, \"b\": {\"command\": \"cat\"}}}\n",
			edit: func(p string) error { return RemoveServer(p, "a") },
			want: []string{"{\"mcpServers\": { \"b\": {\"command\": \"cat\"}}}\n"}},
		{name: "json: remove the last", file: "c.json", before: "{\"mcpServers\": {\"a\": {\"command\": \"echo\"}, \"b\": {\"command\": \"cat\"}}}\n",
			edit: func(p string) error { return RemoveServer(p, "b") },
			want: []string{"{\"mcpServers\": {\"a\": {\"command\": \"echo\"}}}\n"}},
		{name: "toml is refused", file: "c.toml", before: "[llm]\nmodel = \"m\"\n",
			edit: func(p string) error { return AddServer(p, "b", stdio) }, wantErr: ErrCannotEdit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.edit(path)
			after, _ := os.ReadFile(path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				if string(after) != tc.before {
					t.Errorf("a refused edit changed the file:\n%s", after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(after), w) {
					t.Errorf("the file lacks %q:\n%s", w, after)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(after), w) {
					t.Errorf("the file still has %q:\n%s", w, after)
				}
			}
			if _, err := Parse(after, filepath.Ext(path), path); err != nil {
				t.Errorf("the edited file does not load: %v", err)
			}
			info, _ := os.Stat(path)
			if want := os.FileMode(0o640); tc.before == "" {
				want = 0o600
				if info.Mode().Perm() != want {
					t.Errorf("mode %v, want %v", info.Mode().Perm(), want)
				}
			} else if info.Mode().Perm() != want {
				t.Errorf("mode %v, want the file's own %v", info.Mode().Perm(), want)
			}
		})
	}
}
