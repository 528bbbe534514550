package plugins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

const redactedMask = "[REDACTED]"

// minRedactLen keeps the private redactor from masking one- or two-letter
// values, which would shred every log line while protecting nothing.
const minRedactLen = 4

// valueRedactor is the default Redactor: exact-substring masking of every
// value added.
type valueRedactor struct {
	mu       sync.RWMutex
	values   map[string]struct{}
	replacer *strings.Replacer
}

func newValueRedactor() *valueRedactor {
	return &valueRedactor{values: map[string]struct{}{}}
}

func (r *valueRedactor) Add(v string) {
	if len(v) < minRedactLen {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.values[v]; ok {
		return
	}
	r.values[v] = struct{}{}
	vals := make([]string, 0, len(r.values))
	for k := range r.values {
		vals = append(vals, k)
	}
	// Longest first, so a value containing another is masked whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	pairs := make([]string, 0, 2*len(vals))
	for _, k := range vals {
		pairs = append(pairs, k, redactedMask)
	}
	r.replacer = strings.NewReplacer(pairs...)
}

func (r *valueRedactor) Redact(s string) string {
	r.mu.RLock()
	rep := r.replacer
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// logGate holds back log lines that arrive while Resolve calls are in
// flight, until those calls have returned and their values are known to the
// redactor. Without it a plugin that logs a value and then returns it would
// have the log line written before the host could mask the value. Lines are
// redacted when released, not when they arrive. Calls are bounded by the
// call timeout, so a line waits at most that long.
type logGate struct {
	red Redactor

	mu       sync.Mutex
	seq      uint64
	inflight map[uint64]struct{}
	held     []heldLine
	dropped  int
	// notice reports dropped lines; set once by the owner.
	notice func(dropped int)
}

type heldLine struct {
	after uint64 // the newest call started when the line arrived
	emit  func()
}

// maxHeldLines bounds the memory a chatty plugin can pin while calls are in
// flight; beyond it the oldest held lines are dropped and counted.
const maxHeldLines = 1000

func newLogGate(red Redactor) *logGate {
	return &logGate{red: red, inflight: map[uint64]struct{}{}}
}

// begin marks the start of a call and returns its ticket for end.
func (g *logGate) begin() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.inflight[g.seq] = struct{}{}
	return g.seq
}

// end marks a call finished (after its value was added to the redactor)
// and releases the lines no remaining call could have produced a value for.
func (g *logGate) end(ticket uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inflight, ticket)
	g.releaseLocked()
}

// flush releases every held line; used on Close.
func (g *logGate) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.inflight)
	g.releaseLocked()
}

func (g *logGate) submit(emit func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.inflight) == 0 && len(g.held) == 0 {
		emit()
		return
	}
	if len(g.held) >= maxHeldLines {
		g.held = g.held[1:]
		g.dropped++
	}
	g.held = append(g.held, heldLine{after: g.seq, emit: emit})
}

// releaseLocked emits held lines in arrival order while no call that was in
// flight when they arrived is still running. Emitting under the lock keeps
// the order of lines intact.
func (g *logGate) releaseLocked() {
	oldest := uint64(0)
	for s := range g.inflight {
		if oldest == 0 || s < oldest {
			oldest = s
		}
	}
	n := 0
	for _, h := range g.held {
		if oldest != 0 && h.after >= oldest {
			break
		}
		h.emit()
		n++
	}
	g.held = g.held[n:]
	if len(g.held) == 0 {
		g.held = nil
	}
	if g.dropped > 0 && oldest == 0 && g.notice != nil {
		g.notice(g.dropped)
		g.dropped = 0
	}
}

// redactingLogger masks known values in everything it logs and routes each
// line through the gate. It wraps the operator's logger and is what
// go-plugin (and so the plugin's stderr) writes to.
type redactingLogger struct {
	inner hclog.Logger
	gate  *logGate
}

var _ hclog.Logger = (*redactingLogger)(nil)

func newRedactingLogger(inner hclog.Logger, gate *logGate) *redactingLogger {
	return &redactingLogger{inner: inner, gate: gate}
}

func (l *redactingLogger) wrap(inner hclog.Logger) hclog.Logger {
	return &redactingLogger{inner: inner, gate: l.gate}
}

func (l *redactingLogger) Log(level hclog.Level, msg string, args ...any) {
	if level != hclog.NoLevel && level < l.inner.GetLevel() {
		return
	}
	inner, red := l.inner, l.gate.red
	l.gate.submit(func() { inner.Log(level, red.Redact(msg), redactArgs(red, args)...) })
}

func (l *redactingLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *redactingLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *redactingLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *redactingLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *redactingLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }
func (l *redactingLogger) IsTrace() bool                 { return l.inner.IsTrace() }
func (l *redactingLogger) IsDebug() bool                 { return l.inner.IsDebug() }
func (l *redactingLogger) IsInfo() bool                  { return l.inner.IsInfo() }
func (l *redactingLogger) IsWarn() bool                  { return l.inner.IsWarn() }
func (l *redactingLogger) IsError() bool                 { return l.inner.IsError() }
func (l *redactingLogger) ImpliedArgs() []any            { return l.inner.ImpliedArgs() }
func (l *redactingLogger) Name() string                  { return l.inner.Name() }
func (l *redactingLogger) SetLevel(level hclog.Level)    { l.inner.SetLevel(level) }
func (l *redactingLogger) GetLevel() hclog.Level         { return l.inner.GetLevel() }

func (l *redactingLogger) With(args ...any) hclog.Logger {
	return l.wrap(l.inner.With(redactArgs(l.gate.red, args)...))
}
func (l *redactingLogger) Named(name string) hclog.Logger { return l.wrap(l.inner.Named(name)) }
func (l *redactingLogger) ResetNamed(name string) hclog.Logger {
	return l.wrap(l.inner.ResetNamed(name))
}

func (l *redactingLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *redactingLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{line: func(s string) { l.Log(inferLevel(s), s) }}
}

// redactArgs masks every value argument; numbers, booleans and durations
// cannot carry a secret and keep their type.
func redactArgs(red Redactor, args []any) []any {
	if len(args) == 0 {
		return nil
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
			float32, float64, time.Duration, time.Time, hclog.Level:
			out[i] = v
		case string:
			out[i] = red.Redact(v)
		case error:
			out[i] = red.Redact(v.Error())
		case fmt.Stringer:
			out[i] = red.Redact(v.String())
		case []byte:
			out[i] = red.Redact(string(v))
		default:
			out[i] = red.Redact(fmt.Sprintf("%+v", v))
		}
	}
	return out
}

// inferLevel reads the "[LEVEL]" prefix plugins conventionally use on plain
// stderr lines, as go-plugin does for the lines it forwards.
func inferLevel(line string) hclog.Level {
	switch {
	case strings.HasPrefix(line, "[TRACE]"):
		return hclog.Trace
	case strings.HasPrefix(line, "[DEBUG]"):
		return hclog.Debug
	case strings.HasPrefix(line, "[INFO]"):
		return hclog.Info
	case strings.HasPrefix(line, "[WARN]"):
		return hclog.Warn
	case strings.HasPrefix(line, "[ERROR]"), strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
		return hclog.Error
	default:
		return hclog.Debug
	}
}

// lineWriter calls line for each complete line written to it; a final
// partial line is delivered by Close. A line longer than maxLineLen is
// withheld whole rather than cut: a cut could split a secret so that neither
// half matches the redactor.
type lineWriter struct {
	mu      sync.Mutex
	buf     []byte
	over    bool
	overLen int
	line    func(string)
}

const maxLineLen = 16 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.appendPart(p)
			break
		}
		w.appendPart(p[:i])
		w.finish()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) appendPart(b []byte) {
	if w.over {
		w.overLen += len(b)
		return
	}
	if len(w.buf)+len(b) > maxLineLen {
		w.over, w.overLen, w.buf = true, len(w.buf)+len(b), w.buf[:0]
		return
	}
	w.buf = append(w.buf, b...)
}

func (w *lineWriter) finish() {
	if w.over {
		w.line(fmt.Sprintf("(a %d-byte line was withheld: longer than %d bytes)", w.overLen, maxLineLen))
	} else {
		w.line(strings.TrimRight(string(w.buf), "\r"))
	}
	w.buf, w.over, w.overLen = w.buf[:0], false, 0
}

// Close delivers any final partial line.
func (w *lineWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.over {
		w.finish()
	}
	return nil
}

// parseLogLine turns one plugin stderr line into a log call: hclog JSON
// lines (what the SDK's logger writes) keep their level, message and
// fields; plain lines get a level from their "[LEVEL]" prefix.
func parseLogLine(line string) (hclog.Level, string, []any) {
	if !strings.HasPrefix(line, "{") {
		return inferLevel(line), line, nil
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		return inferLevel(line), line, nil
	}
	level := hclog.Debug
	if lv, ok := entry["@level"].(string); ok {
		if l := hclog.LevelFromString(lv); l != hclog.NoLevel {
			level = l
		}
	}
	msg, _ := entry["@message"].(string)
	keys := make([]string, 0, len(entry))
	for k := range entry {
		switch k {
		case "@level", "@message", "@timestamp", "@module", "@caller":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		v := entry[k]
		if s, ok := v.(string); ok {
			args = append(args, k, s)
			continue
		}
		raw, _ := json.Marshal(v)
		args = append(args, k, string(raw))
	}
	return level, msg, args
}

// stderrTail keeps the last lines a plugin wrote to stderr, raw; they are
// redacted when read, since the values they may contain can become known
// to the redactor later.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

const (
	tailLines   = 20
	tailLineLen = 300
)

func (t *stderrTail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, line)
}

// redacted returns the tail with known values masked and lines capped.
func (t *stderrTail) redacted(red Redactor) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.lines))
	for _, l := range t.lines {
		l = red.Redact(l)
		if len(l) > tailLineLen {
			l = l[:tailLineLen] + "...(truncated)"
		}
		out = append(out, l)
	}
	return out
}

func (t *stderrTail) contains(s string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
