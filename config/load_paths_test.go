package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadResolvesPathsAgainstTheConfigFolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agenthost.yaml")
	abs := filepath.Join(dir, "abs-server")
	data := `
mcpServers:
  rel: {command: ./bin/server, cwd: work}
  bare: {command: npx}
  abs: {command: ` + abs + `}
sources:
  vault: {plugin: plugins/cred, sha256: "` + sha + `"}
bindings:
  - server: rel
    params:
      token: {file: secrets/token.txt}
      plain: {env: X}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"relative command": {cfg.MCPServers["rel"].Command, filepath.Join(dir, "bin/server")},
		"cwd":              {cfg.MCPServers["rel"].Cwd, filepath.Join(dir, "work")},
		"bare command":     {cfg.MCPServers["bare"].Command, "npx"},
		"absolute command": {cfg.MCPServers["abs"].Command, abs},
		"plugin":           {cfg.Sources["vault"].Plugin, filepath.Join(dir, "plugins/cred")},
		"file binding":     {cfg.Bindings[0].Params["token"].File, filepath.Join(dir, "secrets/token.txt")},
		"env binding":      {cfg.Bindings[0].Params["plain"].Env, "X"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %q, want %q", name, c[0], c[1])
		}
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
