package auditlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
)

// TestFileSinkNoticesVanishedFile: a deleted, replaced or moved audit file
// is noticed before the next record is written; the sink reopens the path
// and starts it with a gap line, so no later record goes to a file nobody
// can read.
func TestFileSinkNoticesVanishedFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		act    func(t *testing.T, path string)
		flush  bool   // a moved file is noticed by the path check of a sync round
		prefix string // what the path holds before the gap line
		reason string
	}{
		{name: "deleted", act: func(t *testing.T, path string) { must(t, os.Remove(path)) }, reason: GapDeleted},
		{name: "replaced", act: func(t *testing.T, path string) {
			other := path + ".new"
			must(t, os.WriteFile(other, []byte("{\"other\":1}\n"), 0o600))
			must(t, os.Rename(other, path))
		}, prefix: "{\"other\":1}\n", reason: GapReplaced},
		{name: "deleted_and_recreated", act: func(t *testing.T, path string) {
			must(t, os.Remove(path))
			must(t, os.WriteFile(path, nil, 0o600))
		}, reason: GapReplaced},
		{name: "moved", act: func(t *testing.T, path string) { must(t, os.Rename(path, path+".1")) }, flush: true, reason: GapMoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			var gaps []Gap
			s, err := OpenFileSink(path, FileSinkOptions{OnGap: func(g Gap) { gaps = append(gaps, g) }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range 2 {
				must(t, s.Write(context.Background(), sampleRecord(i, 1)))
			}
			tc.act(t, path)
			awaitNotice(t, s)
			if tc.flush {
				must(t, s.Flush())
			}
			must(t, s.Write(context.Background(), sampleRecord(2, 1)))
			must(t, s.Err())
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("the record after the file vanished went nowhere: %v", err)
			}
			rest, ok := bytes.CutPrefix(raw, []byte(tc.prefix))
			if !ok {
				t.Fatalf("the file's earlier content was changed: %q", raw)
			}
			lines := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("want a gap line and the record, got %q", rest)
			}
			var gap map[string]any
			must(t, json.Unmarshal([]byte(lines[0]), &gap))
			if gap["phase"] != "gap" || gap["reason"] != tc.reason || gap["records"] != float64(2) || gap["path"] != path ||
				gap["since"] == nil || gap["ts"] == nil || !strings.Contains(gap["message"].(string), "2 records") {
				t.Errorf("gap line %s", lines[0])
			}
			if !strings.Contains(lines[1], `"callId":"2"`) {
				t.Errorf("record after the gap: %s", lines[1])
			}
			if len(gaps) != 1 || gaps[0].Reason != tc.reason {
				t.Errorf("OnGap saw %+v", gaps)
			}
			// The reopened file is watched like the first: a second
			// deletion is noticed as well.
			must(t, os.Remove(path))
			awaitNotice(t, s)
			must(t, s.Write(context.Background(), sampleRecord(3, 1)))
			if got := readLines(t, path); len(got) != 2 || string(got[0]["records"]) != "1" || string(got[1]["callId"]) != `"3"` {
				t.Errorf("after a second deletion: %v", got)
			}
			must(t, s.Close())
		})
	}
}

// TestFileSinkChecksTheFileOncePerCall: the file is checked before a
// call's decision record, not again before its result record (where there
// is no file watch: one fstat a call, not two). A result record written to a file deleted while the call
// ran is lost with it and counted in the gap line that the next decision
// record's check writes; that decision record is not lost.
func TestFileSinkChecksTheFileOncePerCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// No sync round (which checks the file too) during the test.
	s, err := openFileSink(path, FileSinkOptions{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	decision := func(i int) *Record {
		r := sampleRecord(i, 1)
		r.Phase, r.Decision, r.Outcome, r.Result = PhaseDecision, rules.ActionAllow, rules.OutcomeAutoAllowed, ResultPending
		return r
	}
	result := func(i int) *Record {
		r := decision(i)
		r.Phase, r.Result = PhaseResult, ResultOK
		return r
	}
	must(t, s.Write(context.Background(), decision(1)))
	must(t, os.Remove(path)) // while call 1 runs
	awaitNotice(t, s)
	must(t, s.Write(context.Background(), result(1)))
	if _, err := os.Stat(path); err == nil {
		t.Fatal("the result record's write checked the file: the path was reopened")
	}
	must(t, s.Write(context.Background(), decision(2)))
	got := readLines(t, path)
	if len(got) != 2 || string(got[0]["phase"]) != `"gap"` || string(got[0]["records"]) != "2" ||
		string(got[1]["callId"]) != `"2"` || string(got[1]["phase"]) != `"decision"` {
		t.Fatalf("want a gap line counting both records of call 1, then call 2's decision; got %v", got)
	}
	must(t, s.Close())
}

// TestFileSinkFailsClosedWhenThePathCannotBeReopened: a vanished file
// whose directory is gone too cannot be replaced; the sink fails, and
// stays failed.
func TestFileSinkFailsClosedWhenThePathCannotBeReopened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	must(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "audit.jsonl")
	s, err := OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Write(context.Background(), sampleRecord(1, 1)))
	must(t, os.RemoveAll(dir))
	awaitNotice(t, s)
	if err := s.Write(context.Background(), sampleRecord(2, 1)); err == nil || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("write after the file and its directory were removed: %v", err)
	}
	must(t, os.Mkdir(dir, 0o700))
	if err := s.Write(context.Background(), sampleRecord(3, 1)); err == nil {
		t.Error("the sink recovered silently after failing")
	}
	if s.Err() == nil {
		t.Error("Err() is nil")
	}
	if err := s.Close(); err == nil {
		t.Error("Close hid the failure")
	}
}

// fullDisk is a file that takes limit bytes and then fails with ENOSPC,
// after a partial write like write(2) does. Without cut it cannot be
// truncated.
type fullDisk struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	room := d.limit - len(d.buf)
	if room >= len(p) {
		d.buf = append(d.buf, p...)
		return len(p), nil
	}
	d.buf = append(d.buf, p[:max(room, 0)]...)
	return max(room, 0), syscall.ENOSPC
}

func (d *fullDisk) Sync() error  { return nil }
func (d *fullDisk) Close() error { return nil }
func (d *fullDisk) content() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return string(d.buf)
}

type cuttableDisk struct{ fullDisk }

func (d *cuttableDisk) Seek(offset int64, whence int) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if offset != 0 || whence != io.SeekCurrent {
		return 0, errors.New("unsupported seek")
	}
	return int64(len(d.buf)), nil
}

func (d *cuttableDisk) Truncate(size int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.buf = d.buf[:size]
	return nil
}

// TestFileSinkShortWrite: a write that runs out of space part-way leaves no
// torn line in front of later records, and fails the sink.
func TestFileSinkShortWrite(t *testing.T) {
	first := string(append(sampleRecord(0, 10).appendJSON(nil), '\n'))
	for _, tc := range []struct {
		name     string
		limit    int
		cuttable bool
		want     string // the file's content afterwards ("" + torn: the first line and part of the second)
		msg      string
	}{
		{"torn line cut off", len(first) + 40, true, first, "partial line was removed"},
		{"no room at all", len(first), true, first, "no space"},
		{"cannot cut", len(first) + 40, false, "", "could not be removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f interface {
				auditFile
				content() string
			}
			if tc.cuttable {
				f = &cuttableDisk{fullDisk{limit: tc.limit}}
			} else {
				f = &fullDisk{limit: tc.limit}
			}
			s := newFileSink(f, "full", FileSinkOptions{})
			defer s.Close()
			must(t, s.Write(context.Background(), sampleRecord(0, 10)))
			err := s.Write(context.Background(), sampleRecord(1, 10))
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("short write: %v, want ENOSPC saying %q", err, tc.msg)
			}
			got := f.content()
			if tc.want != "" && got != tc.want {
				t.Errorf("file after the short write:\n%q\nwant\n%q", got, tc.want)
			}
			if tc.want == "" && (!strings.HasPrefix(got, first) || len(got) != tc.limit) {
				t.Errorf("file after the short write: %q", got)
			}
			// Sticky: room again does not bring the sink back (records
			// may be missing; the operator must look).
			if c, ok := f.(*cuttableDisk); ok {
				c.mu.Lock()
				c.limit = 1 << 20
				c.mu.Unlock()
			}
			if err := s.Write(context.Background(), sampleRecord(2, 1)); err == nil {
				t.Error("write after a short write succeeded")
			}
			if got := f.content(); tc.want != "" && got != tc.want {
				t.Errorf("a later record was written after the failure: %q", got)
			}
		})
	}
}

// shortWriter accepts part of every write without an error (an io.Writer
// breaking its contract); the sink must not take that for success.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestWriterSinkShortWrite(t *testing.T) {
	s := NewWriterSink(shortWriter{})
	if err := s.Write(context.Background(), sampleRecord(1, 1)); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short write: %v", err)
	}
	if s.Err() == nil {
		t.Error("short write not sticky")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// awaitNotice waits out the detection window: until the sink's file watch
// has seen what the test did to the file (at once where there is no watch:
// every decision record checks the file then).
func awaitNotice(t *testing.T, s *FileSink) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		w := s.watch
		s.mu.Unlock()
		if w == nil || w.fired.Load() || w.lost.Load() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the file watch saw nothing within 10s")
		}
	}
}
