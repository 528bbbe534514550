//go:build unix

package mcpconn

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestStdioStartsTheAdmittedFile: under a managed allowlist, each start
// resolves the command, checks that file and executes the file that
// matched, not the command's path again: a user's symlink that pointed
// into the admitted folder when the config was loaded and points out at
// the start is refused, never run.
func TestStdioStartsTheAdmittedFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	admitted := filepath.Join(dir, "opt", "server")
	evil := filepath.Join(dir, "home", "evil")
	for _, p := range []string{admitted, evil} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+filepath.Base(p)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "home", "link")
	if err := os.Symlink(admitted, link); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{File: "agenthost.yaml",
		Managed:    &config.Managed{File: "managed.yaml", AllowedServers: []config.ServerPattern{{Command: filepath.Join(dir, "opt", "*")}}},
		MCPServers: map[string]*config.Server{"s": {Command: link}}}
	if err := cfg.AdmitServer("s"); err != nil {
		t.Fatal(err)
	}
	c := &Conn{name: "s", cfg: cfg.MCPServers["s"], logger: slog.New(slog.DiscardHandler),
		admit: func(p string) (string, error) { return cfg.AdmitExecutable("s", p) }}

	cmd, err := c.command(context.Background(), link, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != admitted || cmd.Args[0] != link {
		t.Fatalf("executes %s as %s, want %s as %s", cmd.Path, cmd.Args[0], admitted, link)
	}
	if out, err := cmd.Output(); err != nil || string(out) != "server\n" {
		t.Fatalf("ran %q, %v", out, err)
	}

	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	if cmd, err := c.command(context.Background(), link, nil, nil); err == nil || !strings.Contains(err.Error(), "not allowed by the managed policy") {
		t.Fatalf("the link points out of the admitted folder: %v, %v; want a refusal", cmd, err)
	}
}
