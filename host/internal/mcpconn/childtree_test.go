//go:build linux

package mcpconn

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// TestStdioCloseEndsServerTree: without a supervisor (a library user's
// host), closing a stdio transport ends what the server started too, not
// only the server process mcp-go knows.
func TestStdioCloseEndsServerTree(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	script := "sleep 300 >/dev/null 2>&1 </dev/null & echo $! > " + pidfile + ".tmp && mv " + pidfile + ".tmp " + pidfile + "; exec cat >/dev/null"
	c := &Conn{
		name:   "srv",
		cfg:    &config.Server{Command: "/bin/sh", Args: []string{"-c", script}},
		logger: slog.New(slog.DiscardHandler),
	}
	tr, err := c.newTransport(&wirecheck.Pending{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var pid int
	deadline := time.Now().Add(10 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
		}
		if time.Now().After(deadline) {
			_ = tr.Close()
			t.Fatal("the server never wrote its child's pid")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	_ = tr.Close() // cat exits on EOF: no error expected, none required
	deadline = time.Now().Add(10 * time.Second)
	for liveProcess(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child (pid %d) outlived Close by 10s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveProcess reports whether pid is a live (non-zombie) process.
func liveProcess(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
