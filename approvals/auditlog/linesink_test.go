package auditlog

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// FileSink and WriterSink share one write path: a closed sink refuses with
// ErrSinkClosed, a failed one keeps failing and says why, naming its
// target.
func TestLineSinksShareTheWritePath(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		open func(t *testing.T) (s interface {
			Sink
			Err() error
		}, fail func(), target string)
	}{
		{"file", func(t *testing.T) (interface {
			Sink
			Err() error
		}, func(), string) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := OpenFileSink(path, FileSinkOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return s, func() { s.mu.Lock(); s.err = errors.New("disk gone"); s.mu.Unlock() }, "audit log " + path
		}},
		{"writer", func(t *testing.T) (interface {
			Sink
			Err() error
		}, func(), string) {
			var b strings.Builder
			s := NewWriterSink(&b)
			return s, func() { s.mu.Lock(); s.err = errors.New("pipe gone"); s.mu.Unlock() }, "audit writer"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, fail, target := tt.open(t)
			if err := s.Write(ctx, sampleRecord(1, 1)); err != nil || s.Err() != nil {
				t.Fatalf("first write: %v, %v", err, s.Err())
			}
			fail()
			err := s.Write(ctx, sampleRecord(2, 1))
			if err == nil || !strings.HasPrefix(err.Error(), target+" unusable after an earlier failure") {
				t.Errorf("write after a failure: %v, want it to name %q", err, target)
			}
			if s.Err() == nil {
				t.Error("the failure is not sticky")
			}
			if err := s.Close(); err != nil && !strings.Contains(err.Error(), "gone") {
				t.Fatal(err)
			}
			if err := s.Write(ctx, sampleRecord(3, 1)); !errors.Is(err, ErrSinkClosed) {
				t.Errorf("write after Close: %v, want ErrSinkClosed", err)
			}
		})
	}
}
