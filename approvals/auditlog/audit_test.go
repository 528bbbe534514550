package auditlog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func sampleRecord(i int, argLen int) *Record {
	risk := risk.FailClosed()
	return &Record{
		TS: time.Unix(int64(i), 0), SessionID: "s", CallID: fmt.Sprint(i), Server: "srv", Tool: "tool",
		ToolDefHash: "sha256:x", ExposedName: "srv__tool",
		Arguments:    json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", argLen))),
		SecureParams: []string{"token"}, Risk: &risk, Decision: rules.ActionDeny, Outcome: rules.OutcomeDeniedByRule, Result: ResultNotExecuted,
	}
}

func readLines(t *testing.T, path string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not one JSON record: %v\n%.200s", len(out)+1, err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFileSinkDurableAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if err := s.Write(context.Background(), sampleRecord(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), sampleRecord(99, 1)); !errors.Is(err, ErrSinkClosed) {
		t.Errorf("write after close: %v", err)
	}
	lines := readLines(t, path)
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for i, m := range lines {
		if string(m["callId"]) != fmt.Sprintf("%q", fmt.Sprint(i)) || string(m["approvers"]) != "[]" || string(m["rules"]) != "[]" {
			t.Errorf("line %d: %v", i, m)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("audit file mode %v, want 0600", st.Mode().Perm())
	}
	// Appending later keeps earlier records, and repairs a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"torn":`)
	f.Close()
	s, err = OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Write(context.Background(), sampleRecord(50, 1))
	s.Close()
	raw, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(all) != 52 || all[50] != `{"torn":` || !strings.Contains(all[51], `"callId":"50"`) {
		t.Errorf("after reopen: %d lines, last two %q", len(all), all[len(all)-2:])
	}
}

// fakeFile fails on demand and counts syncs.
type fakeFile struct {
	mu       sync.Mutex
	lines    int
	writeErr error
	syncErr  error
	syncs    atomic.Int32
	closed   bool
}

func (f *fakeFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeErr != nil {
		return 0, f.writeErr
	}
	f.lines++
	return len(p), nil
}

func (f *fakeFile) Sync() error {
	f.syncs.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncErr
}

func (f *fakeFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func TestFileSinkSyncsInBatches(t *testing.T) {
	f := &fakeFile{}
	s := newFileSink(f, "fake", FileSinkOptions{SyncInterval: 10 * time.Millisecond})
	// Nothing written: no fsync needed.
	time.Sleep(40 * time.Millisecond)
	if n := f.syncs.Load(); n != 0 {
		t.Errorf("%d syncs with nothing written", n)
	}
	for i := 0; i < 100; i++ {
		if err := s.Write(context.Background(), sampleRecord(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.syncs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("written records were never fsynced without Close")
		}
		time.Sleep(time.Millisecond)
	}
	if n := f.syncs.Load(); n >= 100 {
		t.Errorf("%d syncs for 100 records: not batched", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !f.closed {
		t.Error("file not closed")
	}
}

func TestFileSinkFailuresSurface(t *testing.T) {
	t.Run("write error is returned and sticky", func(t *testing.T) {
		f := &fakeFile{writeErr: errors.New("disk full")}
		s := newFileSink(f, "fake", FileSinkOptions{})
		if err := s.Write(context.Background(), sampleRecord(1, 1)); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("err %v", err)
		}
		f.mu.Lock()
		f.writeErr = nil
		f.mu.Unlock()
		if err := s.Write(context.Background(), sampleRecord(2, 1)); err == nil {
			t.Error("write after a failure succeeded: records may be missing")
		}
		if s.Err() == nil {
			t.Error("Err() is nil")
		}
		if err := s.Close(); err == nil {
			t.Error("Close hid the failure")
		}
	})
	t.Run("fsync error is sticky", func(t *testing.T) {
		f := &fakeFile{syncErr: errors.New("EIO")}
		s := newFileSink(f, "fake", FileSinkOptions{})
		if err := s.Write(context.Background(), sampleRecord(1, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err == nil {
			t.Fatal("Flush hid the fsync error")
		}
		if err := s.Write(context.Background(), sampleRecord(2, 1)); err == nil || !strings.Contains(err.Error(), "EIO") {
			t.Errorf("write after fsync failure: %v", err)
		}
		s.Close()
	})
	t.Run("file closed underneath", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "a.jsonl")
		s, err := OpenFileSink(path, FileSinkOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.f.(*os.File).Close()
		if err := s.Write(context.Background(), sampleRecord(1, 1)); err == nil {
			t.Error("write to a closed file succeeded")
		}
		s.Close()
	})
	t.Run("unopenable path", func(t *testing.T) {
		dir := t.TempDir()
		notDir := filepath.Join(dir, "file")
		os.WriteFile(notDir, nil, 0o600)
		if _, err := OpenFileSink(filepath.Join(notDir, "audit.jsonl"), FileSinkOptions{}); err == nil {
			t.Error("opened an audit file under a regular file")
		}
	})
	t.Run("writer sink", func(t *testing.T) {
		s := NewWriterSink(failingWriter{})
		if err := s.Write(context.Background(), sampleRecord(1, 1)); err == nil {
			t.Error("failing writer: no error")
		}
		if err := (MultiSink{Discard{}, s}).Write(context.Background(), sampleRecord(1, 1)); err == nil {
			t.Error("MultiSink hid a failure")
		}
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestFileSinkConcurrentWritersNeverInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 100
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				// Large records make torn or interleaved writes visible.
				if err := s.Write(context.Background(), sampleRecord(w*each+i, 4<<10)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	seen := map[string]bool{}
	for _, m := range lines {
		seen[string(m["callId"])] = true
	}
	if len(lines) != writers*each || len(seen) != writers*each {
		t.Errorf("%d lines, %d distinct records, want %d", len(lines), len(seen), writers*each)
	}
}

func TestSinkHelpers(t *testing.T) {
	var got []string
	var mu sync.Mutex
	fn := SinkFunc(func(_ context.Context, r *Record) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.CallID)
		return nil
	})
	var buf strings.Builder
	m := MultiSink{fn, NewWriterSink(&buf)}
	if err := m.Write(context.Background(), sampleRecord(7, 1)); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "7" || !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("func sink %v, writer %q", got, buf.String())
	}
	if s, err := OpenSink(""); err != nil || s != (Discard{}) {
		t.Errorf("OpenSink(\"\") = %v, %v", s, err)
	}
	if s, err := OpenSink("-"); err != nil {
		t.Errorf("OpenSink(-): %v", err)
	} else if _, ok := s.(*WriterSink); !ok {
		t.Errorf("OpenSink(-) = %T", s)
	}
}

func TestRecordArgumentsAlwaysValidJSON(t *testing.T) {
	r := sampleRecord(1, 1)
	r.Arguments = json.RawMessage(`{"broken":`)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["arguments"]) != `"{\"broken\":"` {
		t.Errorf("arguments %s", m["arguments"])
	}
	r.Arguments, r.Risk = nil, nil
	b, _ = json.Marshal(*r) // a value marshals the same way as a pointer
	if !strings.Contains(string(b), `"arguments":null`) || !strings.Contains(string(b), `"secureParams":["token"]`) {
		t.Errorf("record %s", b)
	}
}

// TestFileSinkSyncLoopStartsOnACompleteSink: the sync loop may run its
// first check at once; the sink it reads must already hold its open file
// (go test -race caught the file being set after the loop started).
func TestFileSinkSyncLoopStartsOnACompleteSink(t *testing.T) {
	for range 20 {
		s, err := openFileSink(filepath.Join(t.TempDir(), "audit.jsonl"), FileSinkOptions{}, time.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // several rounds of the loop, the sink untouched
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
