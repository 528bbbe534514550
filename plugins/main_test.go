//go:build linux

package plugins_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/syncbuf"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/plugins"
)

// Executables built once for the whole package by TestMain.
var bin struct {
	credFile, credExec, testPlugin, testHost string
}

func TestMain(m *testing.M) {
	// The test binary is the supervisor of the sandboxed plugins' tests.
	childproc.MaybeSupervise()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agenthost-plugins-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"./cmd/agenthost-cred-file", "./cmd/agenthost-cred-exec",
		"./internal/testplugins/testplugin", "./internal/testhost")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building test executables:", err)
		return 1
	}
	bin.credFile = filepath.Join(dir, "agenthost-cred-file")
	bin.credExec = filepath.Join(dir, "agenthost-cred-exec")
	bin.testPlugin = filepath.Join(dir, "testplugin")
	bin.testHost = filepath.Join(dir, "testhost")
	return m.Run()
}

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer

type harness struct {
	src       *plugins.Source
	logs      *syncBuffer
	socketDir string
}

// newHarness starts from safe test defaults and lets edit adjust them.
func newHarness(t *testing.T, path string, edit func(*plugins.Options)) *harness {
	t.Helper()
	logs := &syncBuffer{}
	opts := plugins.Options{
		Path:     path,
		Checksum: checksum(t, path),
		Env:      []string{"PATH=" + os.Getenv("PATH")},
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "host",
			Level:  hclog.Trace,
			Output: logs,
		}),
		SocketDir:    shortTempDir(t),
		StartTimeout: 10 * time.Second,
		CallTimeout:  10 * time.Second,
	}
	if edit != nil {
		edit(&opts)
	}
	src, err := plugins.NewSource(opts)
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return &harness{src: src, logs: logs, socketDir: opts.SocketDir}
}

func checksum(t testing.TB, path string) []byte {
	t.Helper()
	sum, err := plugins.FileChecksum(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func resolve(t testing.TB, src bindings.Source, ref string) bindings.Resolved {
	t.Helper()
	res, err := src.Resolve(context.Background(), bindings.Request{Ref: ref})
	if err != nil {
		t.Fatalf("Resolve(%q): %v", ref, err)
	}
	return res
}

// waitForFile waits for a file the plugin writes and returns its content.
func waitForFile(t testing.TB, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
	return ""
}

func readPid(t testing.TB, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(waitForFile(t, path))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func waitGone(t testing.TB, what string, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("%s (pid %d) still running 5s later", what, pid)
}

func countLines(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func dirEntries(t testing.TB, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// shortTempDir is a temp dir with a short path: unix socket paths are
// limited to 108 bytes and t.TempDir's names are long.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
