package add

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/config"
)

func TestAddFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want config.ServerEntry
		msg  string
	}{
		{"stdio", []string{"fs", "--", "npx", "-y", "server", "/srv"}, config.ServerEntry{Command: "npx", Args: []string{"-y", "server", "/srv"}}, ""},
		{"stdio with env", []string{"-e", "A=1", "--env", "B= two ", "fs", "run"}, config.ServerEntry{Command: "run", Args: []string{}, Env: map[string]string{"A": "1", "B": " two "}}, ""},
		{"http with headers", []string{"-t", "http", "-H", "X-Key: abc ", "api", "https://example.test/mcp"},
			config.ServerEntry{Type: "http", URL: "https://example.test/mcp", Headers: map[string]string{"X-Key": "abc"}}, ""},
		{"sse", []string{"--transport", "sse", "old", "http://127.0.0.1:9/sse"}, config.ServerEntry{Type: "sse", URL: "http://127.0.0.1:9/sse"}, ""},
		{"header on stdio", []string{"-H", "A: b", "fs", "run"}, config.ServerEntry{}, "--header is for http and sse servers"},
		{"env on http", []string{"-t", "http", "-e", "A=1", "api", "http://x"}, config.ServerEntry{}, "--env is for stdio servers"},
		{"http with arguments", []string{"-t", "http", "api", "http://x", "more"}, config.ServerEntry{}, "a http server takes NAME URL, no more arguments"},
		{"bad transport", []string{"-t", "ws", "api", "ws://x"}, config.ServerEntry{}, `--transport: "ws" is not one of stdio, http, sse`},
		{"bad env", []string{"-e", "novalue", "fs", "run"}, config.ServerEntry{}, `--env: want KEY=VALUE, got "novalue"`},
		{"bad header", []string{"-t", "http", "-H", ": v", "api", "http://x"}, config.ServerEntry{}, `--header: want KEY:VALUE, got ": v"`},
		{"one argument", []string{"fs"}, config.ServerEntry{}, "requires at least 2 arg(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := cmdtest.Factory(t, "", "")
			var got *AddOptions
			err := cmdtest.Parse(NewCmdAdd(f, func(o *AddOptions) error { got = o; return nil }), tc.args...)
			if tc.msg != "" {
				if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("%v, want a usage error saying %q", err, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Entry, tc.want) || got.Scope != "local" || got.ConfigPath != f.ConfigPath {
				t.Errorf("options %+v, want entry %+v", got, tc.want)
			}
		})
	}
}

func TestAddWritesTheConfig(t *testing.T) {
	f, s := cmdtest.Factory(t, "mcpServers: {}\n", "")
	if err := cmdtest.Parse(NewCmdAdd(f, nil), "fs", "--", "run", "x"); err != nil {
		t.Fatal(err)
	}
	if want := "Added stdio MCP server fs to " + f.ConfigPath + "\n"; s.Out.String() != want {
		t.Errorf("stdout %q, want %q", s.Out.String(), want)
	}
	data, _ := os.ReadFile(f.ConfigPath)
	if !strings.Contains(string(data), "fs:") || !strings.Contains(string(data), "command: run") {
		t.Errorf("config not written:\n%s", data)
	}
	err := cmdtest.Parse(NewCmdAdd(f, nil), "fs", "--", "run")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), `a server named "fs" is configured already (agenthost mcp remove fs first)`) {
		t.Errorf("second add: %v", err)
	}
}

func TestAddScopes(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	for _, tc := range []struct{ scope, msg string }{
		{"project", "--scope project and --config name two files: give one"},
		{"user", "--scope user and --config name two files: give one"},
		{"team", `--scope: "team" is not one of local, project, user`},
	} {
		err := cmdtest.Parse(NewCmdAdd(f, nil), "-s", tc.scope, "fs", "run")
		if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("--scope %s: %v, want %q", tc.scope, err, tc.msg)
		}
	}
	// Without --config, user scope is the file under XDG_CONFIG_HOME.
	f.ConfigPath = ""
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if err := cmdtest.Parse(NewCmdAdd(f, nil), "-s", "user", "fs", "run"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "agenthost", "config.yaml")); err != nil {
		t.Errorf("user scope file: %v", err)
	}
}
