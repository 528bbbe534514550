//go:build unix

package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func pinOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ranLines counts the lines of the log the test scripts append to.
func ranLines(t *testing.T, log string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		n[l]++
	}
	return n
}

// TestPinnedHookRunsTheVerifiedBytes flips a symlink between the pinned
// script and another one while hundreds of calls run the hook through
// it: every call must run the pinned script or refuse (a mismatch), and
// the other script must never run. A check by path followed by an exec
// by path (and the interpreter's open by name) ran it dozens of times.
func TestPinnedHookRunsTheVerifiedBytes(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "ran.log")
	good := script(t, dir, "good.sh", `echo good >> "`+log+`"`+"\n")
	evil := script(t, dir, "evil.sh", `echo evil >> "`+log+`"`+"\n")
	link := filepath.Join(dir, "hook")
	point := func(target string) error {
		tmp := link + ".new"
		_ = os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, link)
	}
	if err := point(good); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, pre(link, func(h *Hook) { h.SHA256 = pinOf(t, good) }), dir)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = point(evil)
			_ = point(good)
		}
	}()
	const calls = 600
	mismatches := 0
	for range calls {
		v := r.Pre(context.Background(), call)
		switch {
		case v.Failure == nil:
		case errors.Is(v.Failure, ErrPinMismatch):
			mismatches++
		default:
			close(stop)
			wg.Wait()
			t.Fatalf("call failed: %v", v.Failure)
		}
	}
	close(stop)
	wg.Wait()
	ran := ranLines(t, log)
	t.Logf("%d calls: pinned script ran %d times, %d refused as a mismatch, the other script ran %d times", calls, ran["good"], mismatches, ran["evil"])
	if ran["evil"] > 0 {
		t.Fatalf("the unpinned script ran %d times in %d calls", ran["evil"], calls)
	}
	if ran["good"]+mismatches != calls {
		t.Fatalf("pinned runs %d + mismatches %d != %d calls", ran["good"], mismatches, calls)
	}
	if ran["good"] == 0 {
		t.Fatal("the pinned script never ran: nothing was tested")
	}
}

// TestBareWordHookIsTheOneOnPath: a hook command that is a bare word is
// looked up in PATH once, and that file is pinned and run; a file of the
// same name in agenthost's working directory is neither hashed nor run.
func TestBareWordHookIsTheOneOnPath(t *testing.T) {
	cfgDir, bin, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	log := filepath.Join(cfgDir, "ran.log")
	onPath := script(t, bin, "myhook", `echo path >> "`+log+`"`+"\n")
	inCwd := script(t, cwd, "myhook", `echo cwd >> "`+log+`"`+"\n")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(cwd)
	tests := []struct {
		name    string
		pin     string
		wantErr error
		want    string // the script that ran, "" for none
	}{
		{"pinned to the file on PATH", pinOf(t, onPath), nil, "path"},
		{"pinned to the file in the working directory", pinOf(t, inCwd), ErrPinMismatch, ""},
		{"not pinned", "", nil, "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(log)
			r := newRunner(t, pre("myhook", func(h *Hook) { h.SHA256 = tt.pin }), cfgDir)
			v := r.Pre(context.Background(), call)
			if !errors.Is(v.Failure, tt.wantErr) || (tt.wantErr == nil) != (v.Failure == nil) {
				t.Fatalf("failure = %v, want %v", v.Failure, tt.wantErr)
			}
			ran := ranLines(t, log)
			if ran["cwd"] > 0 {
				t.Fatal("the file in the working directory ran")
			}
			if got := ran["path"] > 0; got != (tt.want == "path") {
				t.Fatalf("the file on PATH ran: %v, want %v", got, tt.want == "path")
			}
		})
	}
}
