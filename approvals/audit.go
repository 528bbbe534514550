package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// Record is one audit line: one tool-call decision. Its JSON has exactly
// the keys documented in docs/audit.md, every one present.
type Record struct {
	TS          time.Time       `json:"ts"`
	SessionID   string          `json:"sessionId"`
	CallID      string          `json:"callId"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	ToolDefHash string          `json:"toolDefHash"`
	ExposedName string          `json:"exposedName"`
	Arguments   json.RawMessage `json:"arguments"` // the model's arguments only
	// SecureParams are the NAMES of the secure parameters filled by the
	// host; values never appear in audit records.
	SecureParams []string   `json:"secureParams"`
	Risk         *Effective `json:"risk"`
	Rules        []string   `json:"rules"`
	Decision     Action     `json:"decision"`
	Outcome      Outcome    `json:"outcome"`
	Approvers    []Vote     `json:"approvers"`
	Result       ResultKind `json:"result"`
	DurationMs   int64      `json:"durationMs"`
}

type recordJSON Record

// MarshalJSON writes the record with empty lists as [] and arguments that
// are not valid JSON as a JSON string, so every record is one valid line.
func (r Record) MarshalJSON() ([]byte, error) {
	c := recordJSON(r)
	c.Arguments = jsonOrString(c.Arguments)
	if c.SecureParams == nil {
		c.SecureParams = []string{}
	}
	if c.Rules == nil {
		c.Rules = []string{}
	}
	if c.Approvers == nil {
		c.Approvers = []Vote{}
	}
	return json.Marshal(c)
}

// NewRecord fills an audit record from a gated call. Result is
// not_executed for calls that do not run; for calls that run the host sets
// Result and DurationMs once the call returns. The record owns copies of
// the arguments and the votes; SecureParams, Rules and the risk's lists
// share the check's and the decision's slices, which are read-only by
// contract (a parsed tool's names, a policy's rule ids, a decision's risk).
func NewRecord(c Check, r Result, ts time.Time) *Record {
	risk := r.Decision.Risk
	rec := &Record{
		TS:           ts.UTC(),
		SessionID:    c.SessionID,
		CallID:       c.CallID,
		Server:       c.Call.Server,
		Tool:         c.Call.Tool,
		ToolDefHash:  c.ToolDefHash,
		ExposedName:  c.ExposedName,
		Arguments:    slices.Clone(c.Call.Args),
		SecureParams: c.SecureParams,
		Risk:         &risk,
		Rules:        r.Decision.Rules,
		Decision:     r.Decision.Action,
		Outcome:      r.Outcome,
		Approvers:    slices.Clone(r.Votes),
	}
	if !r.Allowed() {
		rec.Result = ResultNotExecuted
	}
	return rec
}

// Sink receives audit records. Write must not return before the record is
// handed to durable storage (or failed): the host runs no call whose
// record could not be written.
type Sink interface {
	Write(ctx context.Context, r *Record) error
	Close() error
}

// ErrSinkClosed is returned by writes after Close.
var ErrSinkClosed = errors.New("audit sink closed")

// DefaultSyncInterval is how often a FileSink fsyncs written records.
const DefaultSyncInterval = 200 * time.Millisecond

// syncFile is the part of *os.File a FileSink uses.
type syncFile interface {
	io.Writer
	Sync() error
	Close() error
}

// FileSink appends records as JSON lines to a file. Each record is written
// with a single write(2) before Write returns, under a lock, so lines never
// interleave. An owned goroutine fsyncs at least every sync interval when
// something was written, and Close fsyncs a last time. A failed write or
// fsync is sticky: that Write and every later one return an error, so the
// host stops executing calls.
type FileSink struct {
	mu     sync.Mutex
	f      syncFile
	path   string
	dirty  bool
	err    error
	closed bool

	stop     chan struct{}
	finished chan struct{}
}

// FileSinkOptions configure OpenFileSink.
type FileSinkOptions struct {
	// SyncInterval between fsyncs; 0 means DefaultSyncInterval. Values
	// above DefaultSyncInterval are lowered to it.
	SyncInterval time.Duration
}

// OpenFileSink opens (creating with mode 0600) or appends to the audit file
// at path. If an earlier run left a partial last line, a newline is added
// first so the next record starts on its own line.
func OpenFileSink(path string, opts FileSinkOptions) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	if err := endWithNewline(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open audit log %s: %w", path, err)
	}
	return newFileSink(f, path, opts), nil
}

func endWithNewline(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], st.Size()-1); err != nil {
		return err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte("\n"))
	}
	return err
}

func newFileSink(f syncFile, path string, opts FileSinkOptions) *FileSink {
	interval := opts.SyncInterval
	if interval <= 0 || interval > DefaultSyncInterval {
		interval = DefaultSyncInterval
	}
	s := &FileSink{f: f, path: path, stop: make(chan struct{}), finished: make(chan struct{})}
	go s.syncLoop(interval)
	return s
}

// Write appends one record.
func (s *FileSink) Write(_ context.Context, r *Record) error {
	// The context is not consulted: a decision that was made must be
	// recorded even if the caller has given up.
	line := append(r.appendJSON(make([]byte, 0, 1024)), '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrSinkClosed
	case s.err != nil:
		return fmt.Errorf("audit log %s unusable after an earlier failure: %w", s.path, s.err)
	}
	if _, err := s.f.Write(line); err != nil {
		s.err = err
		return fmt.Errorf("write audit log %s: %w", s.path, err)
	}
	s.dirty = true
	return nil
}

// Err reports the sticky failure, if any: while it is non-nil every Write
// fails.
func (s *FileSink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Flush fsyncs now.
func (s *FileSink) Flush() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSinkClosed
	}
	s.mu.Unlock()
	return s.sync()
}

func (s *FileSink) sync() error {
	s.mu.Lock()
	if !s.dirty {
		err := s.err
		s.mu.Unlock()
		return err
	}
	s.dirty = false
	s.mu.Unlock()
	// fsync outside the lock: writers keep going, and the sync covers every
	// write that completed before it started.
	if err := s.f.Sync(); err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		return fmt.Errorf("sync audit log %s: %w", s.path, err)
	}
	return nil
}

func (s *FileSink) syncLoop(interval time.Duration) {
	defer close(s.finished)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			_ = s.sync() // a failure becomes sticky and surfaces on Write
		}
	}
}

// Close stops the sync goroutine, fsyncs and closes the file. It returns
// the first failure the sink saw, if any.
func (s *FileSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSinkClosed
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.finished
	err := s.sync()
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close audit log %s: %w", s.path, cerr)
	}
	if err == nil {
		s.mu.Lock()
		err = s.err
		s.mu.Unlock()
		if err != nil {
			err = fmt.Errorf("audit log %s: %w", s.path, err)
		}
	}
	return err
}

// WriterSink writes JSON lines to any writer (stderr for audit path "-").
// Writes are serialised; a write error is returned and sticky. It does not
// fsync and Close does not close the writer.
type WriterSink struct {
	mu     sync.Mutex
	w      io.Writer
	err    error
	closed bool
}

// NewWriterSink returns a sink writing to w.
func NewWriterSink(w io.Writer) *WriterSink { return &WriterSink{w: w} }

// Write writes one line.
func (s *WriterSink) Write(_ context.Context, r *Record) error {
	line := append(r.appendJSON(make([]byte, 0, 1024)), '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrSinkClosed
	case s.err != nil:
		return fmt.Errorf("audit writer unusable after an earlier failure: %w", s.err)
	}
	if _, err := s.w.Write(line); err != nil {
		s.err = err
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

// Close marks the sink closed.
func (s *WriterSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Err reports the sticky failure, if any.
func (s *WriterSink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// SinkFunc adapts a function to Sink (Close does nothing).
type SinkFunc func(ctx context.Context, r *Record) error

// Write calls f.
func (f SinkFunc) Write(ctx context.Context, r *Record) error { return f(ctx, r) }

// Close does nothing.
func (SinkFunc) Close() error { return nil }

// MultiSink writes every record to each sink in turn; Write fails if any
// sink fails (after trying all of them).
type MultiSink []Sink

// Write writes to every sink.
func (m MultiSink) Write(ctx context.Context, r *Record) error {
	var errs []error
	for _, s := range m {
		if err := s.Write(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every sink.
func (m MultiSink) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Discard drops every record (audit disabled; the host warns about it).
type Discard struct{}

// Write does nothing.
func (Discard) Write(context.Context, *Record) error { return nil }

// Close does nothing.
func (Discard) Close() error { return nil }

// OpenSink opens the sink named by the audit.path setting: "-" writes to
// stderr, "" discards (audit disabled), anything else is a file path.
func OpenSink(path string) (Sink, error) {
	switch path {
	case "":
		return Discard{}, nil
	case "-":
		return NewWriterSink(os.Stderr), nil
	}
	return OpenFileSink(path, FileSinkOptions{})
}
