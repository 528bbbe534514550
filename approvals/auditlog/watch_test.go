//go:build linux

package auditlog

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileSinkWatchNoticesAMoveBeforeTheNextCall: on Linux the file watch
// sees a rename away, so the next decision record goes to a reopened path
// without waiting for a sync round (none runs in this test), and the
// records written before stay in the moved file.
func TestFileSinkWatchNoticesAMoveBeforeTheNextCall(t *testing.T) {
	path, s := openUnsynced(t)
	must(t, s.Write(context.Background(), sampleRecord(1, 1)))
	must(t, os.Rename(path, path+".1"))
	awaitNotice(t, s)
	must(t, s.Write(context.Background(), sampleRecord(2, 1)))
	got := readLines(t, path)
	if len(got) != 2 || string(got[0]["reason"]) != `"moved"` || string(got[1]["callId"]) != `"2"` {
		t.Fatalf("want a moved gap line, then call 2; got %v", got)
	}
	if old := readLines(t, path+".1"); len(old) != 1 || string(old[0]["callId"]) != `"1"` {
		t.Fatalf("the moved file: %v", old)
	}
	must(t, s.Close())
}

// TestFileSinkWatchIsQuietWhileNothingHappens: writing records raises no
// event, so calls skip the check; a chmod raises one, the check finds the
// same file and writes no gap line. Close ends the watch's goroutine, and
// a reopen replaces the watch (ending the old one's).
func TestFileSinkWatchIsQuietWhileNothingHappens(t *testing.T) {
	path, s := openUnsynced(t)
	w := s.watch
	if w == nil {
		t.Fatal("no inotify watch on Linux")
	}
	must(t, s.Write(context.Background(), sampleRecord(1, 1))) // the first check, after the watch was set
	for i := range 50 {
		must(t, s.Write(context.Background(), sampleRecord(2+i, 1)))
	}
	must(t, s.Flush())
	time.Sleep(20 * time.Millisecond)
	if w.fired.Load() || w.lost.Load() {
		t.Fatalf("writes and fsyncs raised a watch event (fired %v, lost %v)", w.fired.Load(), w.lost.Load())
	}
	must(t, os.Chmod(path, 0o640))
	awaitNotice(t, s)
	must(t, s.Write(context.Background(), sampleRecord(99, 1)))
	if got := readLines(t, path); len(got) != 52 {
		t.Fatalf("a chmod made a gap: %d lines", len(got))
	}
	must(t, os.Remove(path))
	awaitNotice(t, s)
	must(t, s.Write(context.Background(), sampleRecord(100, 1)))
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the old file's watch goroutine still runs after the reopen")
	}
	w2 := s.watch
	if w2 == nil || w2 == w {
		t.Fatalf("the reopened file is not watched anew: %p", w2)
	}
	must(t, s.Close())
	select {
	case <-w2.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch goroutine still runs after Close")
	}
}

// openUnsynced opens a sink with no sync round during the test (the round
// checks the file too), closed when the test ends.
func openUnsynced(t *testing.T) (string, *FileSink) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := openFileSink(path, FileSinkOptions{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return path, s
}
