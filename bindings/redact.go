package bindings

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// RedactedText replaces every registered value in redacted output.
const RedactedText = "[REDACTED]"

// MinRedactLen is the shortest value a Redactor registers. Shorter values
// ("eu", "1", "dev") occur inside ordinary words and numbers, so masking
// them would mangle logs while protecting nothing that is hard to guess.
// This only limits output scrubbing: agenthost never prints a secure value
// of any length in its own messages in the first place.
const MinRedactLen = 4

// Redactor masks registered values in text. It is safe for concurrent use;
// Redact and ContainsSecret take no locks. The zero value is ready to use,
// and a nil *Redactor redacts nothing.
//
// Values end up inside JSON logs and results, written by any JSON encoder,
// so a value is matched in every JSON spelling: each of its characters
// literally or escaped (\uXXXX in either hex case, surrogate pairs, \/ and
// the short escapes), in any mix, and through nested JSON encodings (a JSON
// document inside a JSON string). Base64 and other encodings are not
// masked: they only match when the value was encoded on its own, so
// matching them would promise more than it delivers.
type Redactor struct {
	mu     sync.Mutex
	values sync.Map // registered value -> struct{}
	state  atomic.Pointer[redactState]
}

// redactState is an immutable snapshot of the patterns.
type redactState struct {
	version   uint64
	patterns  []string
	multiline []string // patterns containing '\n' (for RedactingWriter)
	maxLen    int
	filter    *prefilter // set when there are enough patterns to pay off
	numeric   bool       // some value could be part of a JSON number
}

// prefilterAt is the pattern count from which Redact scans the text once
// with a hashed 4-byte prefix filter instead of searching once per
// pattern. One strings.Index pass over log-like text costs about a quarter
// of a prefilter pass (see BenchmarkRedact4KB20Secrets).
var prefilterAt = 4

type span struct{ start, end int }

// NewRedactor returns an empty Redactor.
func NewRedactor() *Redactor { return &Redactor{} }

// Add registers value (and its JSON-escaped spellings). Values shorter
// than MinRedactLen bytes are ignored. Adding a known value is cheap.
func (r *Redactor) Add(value string) {
	if r == nil || len(value) < MinRedactLen {
		return
	}
	if _, ok := r.values.Load(value); ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, loaded := r.values.LoadOrStore(value, struct{}{}); loaded {
		return
	}
	old := r.state.Load()
	next := &redactState{version: 1}
	if old != nil {
		next.version = old.version + 1
		next.patterns = slices.Clip(old.patterns)
		next.multiline = slices.Clip(old.multiline)
		next.maxLen = old.maxLen
		next.numeric = old.numeric
	}
	next.numeric = next.numeric || strings.Trim(value, "0123456789.eE+-") == ""
	for _, p := range spellings(value) {
		if slices.Contains(next.patterns, p) {
			continue
		}
		next.patterns = append(next.patterns, p)
		if strings.Contains(p, "\n") {
			next.multiline = append(next.multiline, p)
		}
		next.maxLen = max(next.maxLen, len(p))
	}
	// The longest JSON spelling: every byte as a \uXXXX escape.
	next.maxLen = max(next.maxLen, maxEscapedLen*len(value))
	if len(next.patterns) >= prefilterAt {
		next.filter = newPrefilter(next.patterns)
	}
	r.state.Store(next)
}

// spellings returns value and its JSON-escaped forms, without duplicates.
func spellings(value string) []string {
	out := []string{value}
	for _, escapeHTML := range []bool{false, true} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if err := enc.Encode(value); err != nil {
			continue
		}
		quoted := strings.TrimSuffix(b.String(), "\n")
		inner := quoted[1 : len(quoted)-1]
		if !slices.Contains(out, inner) {
			out = append(out, inner)
		}
	}
	return out
}

// Len reports how many values are registered.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	n := 0
	r.values.Range(func(any, any) bool { n++; return true })
	return n
}

func (r *Redactor) load() *redactState {
	if r == nil {
		return nil
	}
	st := r.state.Load()
	if st == nil || len(st.patterns) == 0 {
		return nil
	}
	return st
}

// Version changes whenever a value is added: what was checked against
// the values of one version needs checking again under another.
func (r *Redactor) Version() uint64 { return r.version() }

// version changes whenever a value is added; handlers use it to rebuild
// what they derived from older patterns.
func (r *Redactor) version() uint64 {
	if r == nil {
		return 0
	}
	if st := r.state.Load(); st != nil {
		return st.version
	}
	return 0
}

// Redact returns s with every registered value replaced by RedactedText.
// Overlapping matches are merged into one replacement. When nothing
// matches, s itself is returned without allocating.
func (r *Redactor) Redact(s string) string {
	st := r.load()
	if st == nil {
		return s
	}
	out, _ := st.redact(s)
	return out
}

// redact returns s with matches replaced and whether there were any.
func (st *redactState) redact(s string) (string, bool) {
	var buf [8]span
	spans := st.find(s, buf[:0])
	if len(spans) == 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(RedactedText)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String(), true
}

// RedactBytes is Redact for bytes. It returns b itself when nothing
// matches, otherwise a new slice; b is never modified.
func (r *Redactor) RedactBytes(b []byte) []byte {
	st := r.load()
	if st == nil || len(b) == 0 {
		return b
	}
	var buf [8]span
	spans := st.find(bytesView(b), buf[:0])
	if len(spans) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	last := 0
	for _, sp := range spans {
		out = append(out, b[last:sp.start]...)
		out = append(out, RedactedText...)
		last = sp.end
	}
	return append(out, b[last:]...)
}

// ContainsSecret reports whether s contains a registered value.
func (r *Redactor) ContainsSecret(s string) bool {
	st := r.load()
	return st != nil && st.contains(s)
}

// MayMatchNumbers reports whether a registered value could be part of
// the text of a JSON number (it has only digits, '.', 'e', 'E', '+' and
// '-'). Decoded JSON need only have its numbers checked when it does.
func (r *Redactor) MayMatchNumbers() bool {
	st := r.load()
	return st != nil && st.numeric
}

// ContainsSecretBytes is ContainsSecret for bytes (JSON arguments, say),
// without copying them.
func (r *Redactor) ContainsSecretBytes(b []byte) bool {
	st := r.load()
	return st != nil && st.contains(bytesView(b))
}

// RedactError returns err unchanged when its message holds no registered
// value, otherwise an error with the redacted message that still unwraps
// to err (so errors.Is and errors.As keep working).
func (r *Redactor) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.Redact(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// bytesView lets the string search code read b without copying. The
// string must not outlive the call that b is borrowed for, and b is not
// written while it is in use.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// find returns the merged, sorted spans of s covered by registered values,
// in any JSON spelling (see findEscaped).
func (st *redactState) find(s string, out []span) []span {
	out = st.findRaw(s, out)
	if needsUnescape(s) {
		out = st.findEscaped(s, out)
	}
	return mergeSpans(out)
}

// findRaw appends the spans of s where a pattern occurs byte for byte.
func (st *redactState) findRaw(s string, out []span) []span {
	if st.filter != nil {
		out = st.filter.find(s, st.patterns, out)
	} else {
		for _, p := range st.patterns {
			for i := 0; ; {
				j := strings.Index(s[i:], p)
				if j < 0 {
					break
				}
				out = append(out, span{i + j, i + j + len(p)})
				i += j + 1 // overlapping occurrences are all masked
				if i >= len(s) {
					break
				}
			}
		}
	}
	return out
}

func mergeSpans(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// prefilter finds many patterns in one pass: every pattern is at least
// MinRedactLen (4) bytes, so each candidate position is checked against a
// bitset of hashed 4-byte prefixes before any string comparison.
type prefilter struct {
	bits   [1 << 10]uint64 // 65536-bit set
	byHead map[uint32][]int
}

func head(s string, i int) uint32 {
	_ = s[i+3]
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

func bucket(w uint32) uint32 { return (w * 0x9E3779B1) >> 16 }

func newPrefilter(patterns []string) *prefilter {
	f := &prefilter{byHead: make(map[uint32][]int, len(patterns))}
	for i, p := range patterns {
		w := head(p, 0)
		h := bucket(w)
		f.bits[h>>6] |= 1 << (h & 63)
		f.byHead[w] = append(f.byHead[w], i)
	}
	return f
}

func (f *prefilter) find(s string, patterns []string, out []span) []span {
	return f.scan(s, patterns, out, false)
}

func (f *prefilter) any(s string, patterns []string) bool {
	var buf [1]span
	return len(f.scan(s, patterns, buf[:0], true)) > 0
}

func (f *prefilter) scan(s string, patterns []string, out []span, first bool) []span {
	for i := 0; i+4 <= len(s); i++ {
		w := head(s, i)
		h := bucket(w)
		if f.bits[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, idx := range f.byHead[w] {
			if p := patterns[idx]; strings.HasPrefix(s[i:], p) {
				out = append(out, span{i, i + len(p)})
				if first {
					return out
				}
			}
		}
	}
	return out
}
