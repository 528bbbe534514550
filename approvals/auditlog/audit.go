package auditlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// Record is one audit line: a tool call's decision or its result (see
// Phase). Its JSON has exactly the keys documented in docs/audit.md, every
// one present.
type Record struct {
	TS        time.Time `json:"ts"`
	SessionID string    `json:"sessionId"`
	CallID    string    `json:"callId"`
	// Phase is decision (written before the call is sent; the only record
	// of a call that does not run) or result (written after it returns).
	Phase       Phase           `json:"phase"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	ToolDefHash string          `json:"toolDefHash"`
	ExposedName string          `json:"exposedName"`
	Arguments   json.RawMessage `json:"arguments"` // the model's arguments only
	// SecureParams are the NAMES of the secure parameters filled by the
	// host; values never appear in audit records.
	SecureParams []string         `json:"secureParams"`
	Risk         *risk.Effective  `json:"risk"`
	Rules        []string         `json:"rules"`
	Decision     rules.Action     `json:"decision"`
	Outcome      rules.Outcome    `json:"outcome"`
	Approvers    []approvals.Vote `json:"approvers"`
	Result       ResultKind       `json:"result"`
	DurationMs   int64            `json:"durationMs"`
	// ResultLabels are the labels of the call's result (result records
	// only; omitted when it has none): sensitive or untrusted, each with
	// what set it (trust-annotations or action-metadata).
	ResultLabels []risk.ResultLabel `json:"resultLabels,omitempty"`

	// argsCheck is the call's one check of its arguments, for the copy
	// in Arguments (NewRecord): the record's encoding writes arguments it
	// vouches for without validating them again. It vouches only for
	// those bytes, so Arguments replaced (a redactor's rewrite) are
	// checked as before.
	argsCheck rules.ArgsCheck
	// alloc is the allocation NewRecord made the record in (nil: none),
	// for Copy. It is never changed once set.
	alloc *recordAlloc
}

type recordJSON Record

// MarshalJSON writes the record with empty lists as [] and arguments that
// are not valid JSON as a JSON string, so every record is one valid line.
func (r Record) MarshalJSON() ([]byte, error) {
	c := recordJSON(r)
	c.Arguments = r.argsCheck.JSONOrString(c.Arguments)
	if c.SecureParams == nil {
		c.SecureParams = []string{}
	}
	if c.Rules == nil {
		c.Rules = []string{}
	}
	if c.Approvers == nil {
		c.Approvers = []approvals.Vote{}
	}
	return json.Marshal(c)
}

// NewRecord fills a call's decision record from a gated call. Result is
// not_executed for calls that do not run and pending for calls that do; for
// those the host writes this record before sending the call and a copy of
// phase result (Copy), with Result and DurationMs, once it returns. The
// record owns copies of the arguments and the votes; SecureParams, Rules
// and the risk's lists share the check's and the decision's slices, which
// are read-only by contract (a parsed tool's names, a policy's rule ids, a
// decision's risk).
//
// The call's check of its arguments (Call.ArgsCheck) goes with the copy.
// The record, its risk, arguments of up to argsRoom bytes and the room of
// its first Copy are one allocation.
func NewRecord(c approvals.Check, r approvals.Result, ts time.Time) *Record {
	// Filled in place: a composite literal would be built aside and
	// copied in, through the collector's barrier for every pointer of it.
	a := new(recordAlloc)
	a.risk = r.Decision.Risk
	rec := &a.rec
	rec.Arguments, rec.argsCheck = c.Call.ArgsCheck.CloneInto(a.args[:], c.Call.Args)
	rec.TS = ts.UTC()
	rec.SessionID, rec.CallID, rec.Phase = c.SessionID, c.CallID, PhaseDecision
	rec.Server, rec.Tool, rec.ToolDefHash, rec.ExposedName = c.Call.Server, c.Call.Tool, c.ToolDefHash, c.ExposedName
	rec.SecureParams, rec.Risk, rec.Rules = c.SecureParams, &a.risk, r.Decision.Rules
	rec.Decision, rec.Outcome, rec.Approvers = r.Decision.Action, r.Outcome, slices.Clone(r.Votes)
	rec.alloc = a
	if r.Allowed() {
		rec.Result = ResultPending
	} else {
		rec.Result = ResultNotExecuted
	}
	return rec
}

// Copy returns a copy of r, for the record that follows it (a call's
// result record is a copy of its decision record; the host changes the
// copy, never r, which a sink may keep). The first copy of a record made
// by NewRecord (or of a copy of it) takes the room set aside for it in the
// record's allocation; any other is allocated. A copy made with *r is as
// good: Copy only saves the allocation.
func (r *Record) Copy() *Record {
	if a := r.alloc; a != nil && a.copied.CompareAndSwap(false, true) {
		a.next = *r
		return &a.next
	}
	c := *r
	return &c
}

// argsRoom is how many bytes of arguments a record holds in its own
// allocation; longer ones are a slice of their own.
const argsRoom = 116

// recordAlloc is what NewRecord allocates at once: the record, its copy
// of the decision's risk, the room of its first Copy, and the room for its
// arguments (last: the collector scans no further than the last pointer).
type recordAlloc struct {
	rec    Record
	risk   risk.Effective
	next   Record
	copied atomic.Bool // next is taken
	args   [argsRoom]byte
}

// Sink receives audit records. Write must not return before the record is
// handed to durable storage (or failed): the host runs no call whose
// decision record could not be written. The host does not change a record
// after handing it to Write (the result record of a call is a copy).
type Sink interface {
	Write(ctx context.Context, r *Record) error
	Close() error
}

// FailureReporter is implemented by sinks whose write failures are sticky
// (FileSink, WriterSink): Err returns the failure that makes every later
// Write fail, nil while the sink is healthy. The host checks it before
// running the approval workflow, so nobody is asked to approve a call that
// could not be audited.
type FailureReporter interface {
	Err() error
}

// ErrSinkClosed is returned by writes after Close.
var ErrSinkClosed = errors.New("audit sink closed")

// DefaultSyncInterval is how often a FileSink fsyncs written records and
// checks that its path still names the file it appends to.
const DefaultSyncInterval = 200 * time.Millisecond

// auditFile is the part of *os.File a FileSink uses.
type auditFile interface {
	io.Writer
	Sync() error
	Close() error
}

// tornLineCutter is the part of *os.File a FileSink uses to remove the
// partial line a short write left.
type tornLineCutter interface {
	Seek(offset int64, whence int) (int64, error)
	Truncate(size int64) error
}

// Gap is the line a FileSink writes at the start of the file it reopens
// after finding that the file it was appending to was deleted, replaced or
// moved away: records written since Since may be missing from this path.
// It is the only line of an audit file that is not a call's record; its
// phase is "gap".
type Gap struct {
	TS    time.Time `json:"ts"`
	Phase Phase     `json:"phase"`
	// Reason is deleted (the path is gone and so is the file), replaced
	// (the path names another file and the old one is gone) or moved (the
	// old file still exists elsewhere: its records are there).
	Reason string `json:"reason"`
	// Since is when this process opened the previous file.
	Since time.Time `json:"since"`
	// Records is how many lines this process wrote to the previous file.
	Records int64  `json:"records"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Reasons of a Gap.
const (
	GapDeleted  = "deleted"
	GapReplaced = "replaced"
	GapMoved    = "moved"
)

// FileSink appends records as JSON lines to a file. Each record is written
// with a single write(2) before Write returns, under a lock, so lines never
// interleave. An owned goroutine fsyncs at least every sync interval when
// something was written, and Close fsyncs a last time. A failed write or
// fsync is sticky: that Write and every later one return an error, so the
// host stops executing calls. A short write (a full disk) is cut off the
// file when it can be, so no torn line precedes later records, and is
// sticky too.
//
// The sink notices when its file is deleted, replaced or moved away. On
// Linux an inotify watch on the open file (IN_ATTRIB, IN_MOVE_SELF,
// IN_DELETE_SELF; an owned goroutine reads it and sets a flag) makes the
// next record of any phase but result check the file: its link count and
// the path's device and inode against the open file's. A call costs no
// syscall for this while nothing happens to the file. The kernel queues
// the event during the unlink or rename itself; the detection window is
// the time the watch goroutine takes to be scheduled and read it
// (microseconds; milliseconds on a saturated machine): a decision record
// written within it goes to the old file. Elsewhere, or when the watch is
// lost (IN_IGNORED, an overflow), the sink checks the open file's link
// count (one fstat) before every such record, which catches a deleted or
// replaced file. Every sync interval it also checks the link count and
// compares the path's identity with the open file's, which bounds the
// window and catches a file renamed away. Either way it reopens the path
// (creating it) and writes a Gap line first; if the path cannot be
// reopened the sink fails (sticky). A result record is covered by its
// call's decision record's check and the sync interval's: one written to a
// file deleted less than a sync interval earlier is lost with it, like
// every record written before the deletion, and counted in the Gap line's
// Records.
type FileSink struct {
	lineWriter
	f       auditFile
	osf     *os.File    // f when it is a real file: identity checks
	fd      int         // osf's descriptor, written with writeFD; -1: write f
	info    os.FileInfo // osf's identity when opened
	watch   *fileWatch  // osf's watch; nil: check before every decision record
	opened  time.Time
	records int64 // lines written to f
	path    string
	dirty   bool
	onGap   func(Gap)

	stop     chan struct{}
	finished chan struct{}
}

// FileSinkOptions configure OpenFileSink.
type FileSinkOptions struct {
	// SyncInterval between fsyncs; 0 means DefaultSyncInterval. Values
	// above DefaultSyncInterval are lowered to it.
	SyncInterval time.Duration
	// OnGap, if set, is called (under the sink's lock: it must not use
	// the sink) after the sink reopened its path and wrote the Gap line.
	OnGap func(Gap)
}

// OpenFileSink opens (creating with mode 0600) or appends to the audit file
// at path. If an earlier run left a partial last line, a newline is added
// first so the next record starts on its own line.
func OpenFileSink(path string, opts FileSinkOptions) (*FileSink, error) {
	return openFileSink(path, opts, syncInterval(opts))
}

// openFileSink is OpenFileSink with any sync interval (tests use a long
// one to see what the checks before writes do on their own).
func openFileSink(path string, opts FileSinkOptions, interval time.Duration) (*FileSink, error) {
	f, info, err := openAuditFile(path)
	if err != nil {
		return nil, err
	}
	s := newFileSinkEvery(f, path, opts, interval, func(s *FileSink) { s.osf, s.fd, s.info, s.watch = f, rawFD(f, info), info, watchFile(path) })
	return s, nil
}

func openAuditFile(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open audit log: %w", err)
	}
	info, err := endWithNewline(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open audit log %s: %w", path, err)
	}
	return f, info, nil
}

func endWithNewline(f *os.File) (os.FileInfo, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return st, err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], st.Size()-1); err != nil {
		return nil, err
	}
	if last[0] != '\n' {
		_, err = f.Write([]byte("\n"))
	}
	return st, err
}

// syncInterval is opts' sync interval, defaulted and bounded.
func syncInterval(opts FileSinkOptions) time.Duration {
	if interval := opts.SyncInterval; interval > 0 && interval <= DefaultSyncInterval {
		return interval
	}
	return DefaultSyncInterval
}

func newFileSink(f auditFile, path string, opts FileSinkOptions) *FileSink {
	return newFileSinkEvery(f, path, opts, syncInterval(opts), nil)
}

// newFileSinkEvery builds the sink and starts its sync loop; init, when
// set, completes the sink before the loop can read it.
func newFileSinkEvery(f auditFile, path string, opts FileSinkOptions, interval time.Duration, init func(*FileSink)) *FileSink {
	s := &FileSink{lineWriter: lineWriter{name: "audit log " + path}, f: f, fd: -1, path: path, opened: time.Now(), onGap: opts.OnGap, stop: make(chan struct{}), finished: make(chan struct{})}
	if init != nil {
		init(s)
	}
	go s.syncLoop(interval)
	return s
}

// linePool recycles the buffers records are encoded into.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledLine: larger buffers are left to the collector.
const maxPooledLine = 64 << 10

func encodeLine(r *Record, tools *toolCache) *[]byte {
	bp := linePool.Get().(*[]byte)
	*bp = append(r.appendJSONWith((*bp)[:0], tools), '\n')
	return bp
}

func releaseLine(bp *[]byte) {
	if cap(*bp) <= maxPooledLine {
		linePool.Put(bp)
	}
}

// lineWriter is the one write path of the line sinks (FileSink,
// WriterSink): the record is encoded outside the lock; under it a closed
// sink refuses, a failed one says why (the failure is sticky), the sink
// checks its target and writes the whole line with one Write.
type lineWriter struct {
	mu     sync.Mutex
	err    error // sticky: every later Write fails
	closed bool
	name   string // what the errors call the target
	// tools are the encodings of the tools written last (toolCache).
	tools toolCache
}

// lineTarget is what a line sink writes to, called with its lineWriter's
// lock held.
type lineTarget interface {
	// checkBefore runs before r is written.
	checkBefore(r *Record) error
	// writeLine writes one whole line, setting the sticky error on failure.
	writeLine(line []byte) error
}

func (l *lineWriter) write(t lineTarget, r *Record) error {
	bp := encodeLine(r, &l.tools)
	defer releaseLine(bp)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrSinkClosed
	case l.err != nil:
		return fmt.Errorf("%s unusable after an earlier failure: %w", l.name, l.err)
	}
	if err := t.checkBefore(r); err != nil {
		return err
	}
	return t.writeLine(*bp)
}

// Err reports the sticky failure, if any: while it is non-nil every Write
// fails.
func (l *lineWriter) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Write appends one record.
func (s *FileSink) Write(_ context.Context, r *Record) error {
	// The context is not consulted: a decision that was made must be
	// recorded even if the caller has given up.
	return s.write(s, r)
}

// checkBefore checks the file once per call: the result record follows
// its decision record, which was checked (see FileSink).
func (s *FileSink) checkBefore(r *Record) error {
	if r.Phase == PhaseResult {
		return nil
	}
	if check, watched := s.watch.needsCheck(); check {
		return s.checkLocked(watched)
	}
	return nil
}

func (s *FileSink) writeLine(line []byte) error { return s.writeLocked(line) }

// writeLocked writes one whole line with one write(2): to the
// descriptor itself when it has one (the lock is held, so the file's own
// locking has nothing to add), else through f.
func (s *FileSink) writeLocked(line []byte) error {
	var n int
	var err error
	if s.fd >= 0 {
		if n, err = writeFD(s.fd, line); err != nil {
			err = &os.PathError{Op: "write", Path: s.osf.Name(), Err: err} // as the file's Write says it
		}
	} else {
		n, err = s.f.Write(line)
	}
	if err == nil && n == len(line) {
		s.dirty = true
		s.records++
		return nil
	}
	if err == nil {
		err = io.ErrShortWrite
	}
	s.err = err
	if n <= 0 {
		return fmt.Errorf("write audit log %s: %w", s.path, err)
	}
	// A torn line would run into the next record (of this run or the
	// next): cut it off.
	if s.cutTorn(int64(n)) {
		return fmt.Errorf("write audit log %s: short write (%d of %d bytes; the partial line was removed): %w", s.path, n, len(line), err)
	}
	return fmt.Errorf("write audit log %s: short write (%d of %d bytes; the partial line could not be removed, the next run starts a new line): %w", s.path, n, len(line), err)
}

func (s *FileSink) cutTorn(n int64) bool {
	c, ok := s.f.(tornLineCutter)
	if !ok {
		return false
	}
	// In append mode the offset is the end of what this write wrote.
	end, err := c.Seek(0, io.SeekCurrent)
	if err != nil || end < n {
		return false
	}
	return c.Truncate(end-n) == nil
}

// checkLocked makes sure the sink still appends to the file its path
// names, reopening the path (with a Gap line) when it does not. The quick
// check is the open file's link count; full also compares the path's
// identity with the open file's.
func (s *FileSink) checkLocked(full bool) error {
	if s.osf == nil {
		return nil
	}
	gone := false
	links, known, err := linkCount(s.osf)
	switch {
	case err != nil:
		s.err = err
		return fmt.Errorf("audit log %s: %w", s.path, err)
	case known && links == 0:
		gone = true
	case full || !known:
		st, err := os.Stat(s.path)
		gone = (err == nil && !os.SameFile(st, s.info)) || errors.Is(err, fs.ErrNotExist)
	}
	if !gone {
		return nil
	}
	return s.reopenLocked(links, known)
}

func (s *FileSink) reopenLocked(links uint64, known bool) error {
	_, statErr := os.Stat(s.path)
	reason := GapMoved
	switch {
	case known && links == 0 && errors.Is(statErr, fs.ErrNotExist):
		reason = GapDeleted
	case known && links == 0:
		reason = GapReplaced
	case !known && errors.Is(statErr, fs.ErrNotExist):
		reason = GapDeleted
	}
	old := s.f
	if reason == GapMoved {
		_ = old.Sync() // its records live on under another name
	}
	_ = old.Close()
	f, info, err := openAuditFile(s.path)
	if err != nil {
		s.err = fmt.Errorf("the audit file was %s and could not be reopened: %w", reason, err)
		return fmt.Errorf("audit log %s: %w", s.path, s.err)
	}
	gap := Gap{TS: time.Now().UTC(), Phase: PhaseGap, Reason: reason, Since: s.opened.UTC(), Records: s.records, Path: s.path,
		Message: fmt.Sprintf("the audit file was %s while agenthost was writing to it; the %d records this process wrote to it since %s are not in this file",
			reason, s.records, s.opened.UTC().Format(time.RFC3339))}
	s.watch.close()
	s.f, s.osf, s.fd, s.info, s.opened, s.records, s.watch = f, f, rawFD(f, info), info, time.Now(), 0, watchFile(s.path)
	line, _ := json.Marshal(gap) // plain strings, times and a number always encode
	if err := s.writeLocked(append(line, '\n')); err != nil {
		return err
	}
	s.records = 0 // the gap line is not a record
	if s.onGap != nil {
		s.onGap(gap)
	}
	return nil
}

// Flush checks the file's identity (see FileSink) and fsyncs now.
func (s *FileSink) Flush() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSinkClosed
	}
	if s.err == nil {
		_ = s.checkLocked(true) // a failure is sticky; sync reports it
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
	f := s.f
	s.mu.Unlock()
	// fsync outside the lock: writers keep going, and the sync covers every
	// write that completed before it started.
	if err := f.Sync(); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.f != f {
			return nil // reopened meanwhile; the old file was synced or is gone
		}
		if s.err == nil {
			s.err = err
		}
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
			s.mu.Lock()
			if s.err == nil && !s.closed {
				_ = s.checkLocked(true) // a failure is sticky and surfaces on Write
			}
			s.mu.Unlock()
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
	s.watch.close() // no Write runs now: closed is set
	err := s.sync()
	if cerr := s.f.Close(); err == nil && cerr != nil && s.Err() == nil {
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
	lineWriter
	w io.Writer
}

// NewWriterSink returns a sink writing to w.
func NewWriterSink(w io.Writer) *WriterSink {
	return &WriterSink{lineWriter: lineWriter{name: "audit writer"}, w: w}
}

// Write writes one line.
func (s *WriterSink) Write(_ context.Context, r *Record) error { return s.write(s, r) }

// checkBefore: a writer has nothing to check.
func (s *WriterSink) checkBefore(*Record) error { return nil }

func (s *WriterSink) writeLine(line []byte) error {
	if n, err := s.w.Write(line); err != nil || n != len(line) {
		if err == nil {
			err = io.ErrShortWrite
		}
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

// OpenSinkWith is OpenSink with options for a file sink.
func OpenSinkWith(path string, opts FileSinkOptions) (Sink, error) {
	if path == "" || path == "-" {
		return OpenSink(path)
	}
	return OpenFileSink(path, opts)
}
