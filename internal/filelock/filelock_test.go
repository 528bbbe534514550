//go:build unix

package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
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
