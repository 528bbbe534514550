//go:build unix

package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
)

// TestFileStoreProcessesKeepEachOthersTokens: several processes (this test
// binary, re-executed) store tokens for different servers in one file at
// the same moment; every token is in the file afterwards. Without the lock
// between processes their read-change-write cycles overwrite each other.
func TestFileStoreProcessesKeepEachOthersTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "tokens.json")
	const procs, each = 4, 25
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestFileStoreWriterProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), fmt.Sprintf("OAUTH_TEST_WRITER=%s|%d|%d", path, i, each))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	entries, err := oauth.NewFileStore(path).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != procs*each {
		t.Fatalf("%d tokens in the file, want %d: concurrent writers lost each other's", len(entries), procs*each)
	}
}

// TestFileStoreWriterProcess is the writer of the test above (it does
// nothing unless started by it).
func TestFileStoreWriterProcess(t *testing.T) {
	spec := os.Getenv("OAUTH_TEST_WRITER")
	if spec == "" {
		return
	}
	var path string
	var id, n int
	parts := strings.Split(spec, "|")
	if len(parts) != 3 {
		t.Fatalf("bad writer spec %q", spec)
	}
	path = parts[0]
	fmt.Sscan(parts[1], &id)
	fmt.Sscan(parts[2], &n)
	s := oauth.NewFileStore(path)
	for j := range n {
		key := oauth.Key{Subject: "u", Resource: fmt.Sprintf("https://mcp.example/%d/%d", id, j), Issuer: "https://as.example"}
		if err := s.Put(context.Background(), key, &oauth.Token{AccessToken: "a"}); err != nil {
			t.Fatal(err)
		}
	}
}

// An existing state directory that others may open is made 0700 by the
// first change (MkdirAll leaves it as it is), and a symbolic link planted
// at tokens.json.lock is refused, its target never created.
func TestFileStoreStateDirectory(t *testing.T) {
	ctx := context.Background()
	key := oauth.Key{Subject: "u", Resource: "https://mcp.example/x", Issuer: "https://as.example"}
	t.Run("an existing open directory is made 0700", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "agenthost")
		must(t, os.Mkdir(dir, 0o700))
		must(t, os.Chmod(dir, 0o777))
		must(t, oauth.NewFileStore(filepath.Join(dir, "tokens.json")).Put(ctx, key, &oauth.Token{AccessToken: "a"}))
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("state directory mode %v, %v; want 0700", fi.Mode().Perm(), err)
		}
	})
	t.Run("a link at the lock file is not followed", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "planted")
		must(t, os.Symlink(target, filepath.Join(dir, "tokens.json.lock")))
		err := oauth.NewFileStore(filepath.Join(dir, "tokens.json")).Put(ctx, key, &oauth.Token{AccessToken: "a"})
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("Put = %v, want the link refused", err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the link's target was created: %v", err)
		}
	})
}
