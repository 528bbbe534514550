//go:build unix

package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestLockExcludes: while one holder has the lock, a second Lock waits (and
// gives up when its context ends); after the release it gets the lock.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	release, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := Lock(context.Background(), path)
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("Lock after the release: %v", err)
	}
}

// TestLockSerialises: many holders in turn never overlap.
func TestLockSerialises(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	var mu sync.Mutex
	inside, overlaps := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				release, err := Lock(context.Background(), path)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				if inside > 1 {
					overlaps++
				}
				mu.Unlock()
				time.Sleep(50 * time.Microsecond)
				mu.Lock()
				inside--
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	if overlaps > 0 {
		t.Fatalf("%d overlapping holders", overlaps)
	}
}

// TestLockRefusesWhatIsNotARegularFile: a symbolic link planted at the
// lock path is not followed (O_CREATE would create its target, or lock a
// file of the link's choosing), and a FIFO is refused too.
func TestLockRefusesWhatIsNotARegularFile(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, path, target string)
	}{
		{"a link to a file that does not exist", func(t *testing.T, path, target string) {
			must(t, os.Symlink(target, path))
		}},
		{"a link to an existing file", func(t *testing.T, path, target string) {
			must(t, os.WriteFile(target, []byte("keep"), 0o600))
			must(t, os.Symlink(target, path))
		}},
		{"a FIFO", func(t *testing.T, path, _ string) {
			must(t, syscall.Mkfifo(path, 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, target := filepath.Join(dir, "x.lock"), filepath.Join(dir, "target")
			tt.plant(t, path, target)
			before, _ := os.ReadFile(target)
			release, err := Lock(context.Background(), path)
			release()
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("Lock = %v, want ErrNotRegular", err)
			}
			after, statErr := os.ReadFile(target)
			if string(after) != string(before) || (before == nil && !errors.Is(statErr, os.ErrNotExist)) {
				t.Fatalf("the link's target was created or changed: %q -> %q (%v)", before, after, statErr)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
