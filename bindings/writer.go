package bindings

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"unicode/utf8"
)

// ErrWriterClosed is returned by writes to a closed RedactingWriter.
var ErrWriterClosed = errors.New("redacting writer closed")

// maxLineBuffer bounds how much of a line without a newline is held back.
const maxLineBuffer = 64 << 10

// RedactingWriter returns a writer that masks registered values before
// passing output on to w. Output is passed on a line at a time, so a value
// split across two Write calls is still caught; a value that itself spans
// lines (a PEM key, say) is held back until it is complete. A line longer
// than 64 KiB is passed on in pieces, never cutting through a value.
// Close passes on what is still buffered; it does not close w. Safe for
// concurrent use.
func RedactingWriter(w io.Writer, r *Redactor) io.WriteCloser {
	return &redactingWriter{w: w, r: r}
}

type redactingWriter struct {
	mu     sync.Mutex
	w      io.Writer
	r      *Redactor
	buf    []byte
	closed bool
}

// Write buffers p and passes on every complete line. It reports len(p)
// unless the writer is closed; an error from w is returned as is.
func (rw *redactingWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.closed {
		return 0, ErrWriterClosed
	}
	rw.buf = append(rw.buf, p...)
	if cut := rw.safeCut(); cut > 0 {
		if err := rw.emit(cut); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Close passes on the buffered rest.
func (rw *redactingWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.closed {
		return nil
	}
	rw.closed = true
	if len(rw.buf) == 0 {
		return nil
	}
	return rw.emit(len(rw.buf))
}

func (rw *redactingWriter) emit(cut int) error {
	_, err := rw.w.Write(rw.r.RedactBytes(rw.buf[:cut]))
	rw.buf = append(rw.buf[:0], rw.buf[cut:]...)
	return err
}

// safeCut returns how many leading bytes of the buffer can be passed on
// without splitting a registered value.
func (rw *redactingWriter) safeCut() int {
	buf := rw.buf
	cut := bytes.LastIndexByte(buf, '\n') + 1
	st := rw.r.load()
	if st != nil && cut > 0 {
		cut = holdBackMultiline(buf, cut, st.multiline)
	}
	if len(buf)-cut > maxLineBuffer {
		long := len(buf)
		if st != nil {
			long = avoidSplit(bytesView(buf), len(buf)-(st.maxLen-1), st)
		}
		cut = max(cut, long)
	}
	return cut
}

// holdBackMultiline moves cut back to the start of any occurrence, whole
// or still incomplete, of a pattern containing a newline that would
// otherwise straddle it. Patterns without a newline cannot straddle a cut
// made just after a newline.
func holdBackMultiline(buf []byte, cut int, multiline []string) int {
	for _, p := range multiline {
		for s := max(0, cut-len(p)+1); s < cut; s++ {
			rest := buf[s:]
			n := min(len(rest), len(p))
			if string(rest[:n]) == p[:n] {
				cut = min(cut, s)
				break
			}
		}
	}
	return cut
}

// avoidSplit moves cut back to the start of any registered value that
// would straddle it. Every value starting before cut lies wholly in buf
// because cut is at most len(buf)-(maxLen-1).
func avoidSplit(buf string, cut int, st *redactState) int {
	cut = max(cut, 0)
	var spans [8]span
	for _, sp := range st.find(buf, spans[:0]) {
		if sp.start < cut && sp.end > cut {
			cut = sp.start
		}
	}
	return cut
}

// StreamRedactor masks registered values in text that arrives in pieces
// (a model's streamed reply): a value split across pieces is still caught.
// Write returns what can be passed on now, redacted; it holds back the
// tail that could still be the start of a value (at most the longest
// spelling of a registered value), and nothing while no value is
// registered. Flush returns the rest. Not safe for concurrent use.
type StreamRedactor struct {
	r       *Redactor
	pending string
}

// NewStream returns a StreamRedactor over r's values.
func (r *Redactor) NewStream() *StreamRedactor { return &StreamRedactor{r: r} }

// Write adds piece and returns the redacted text that is safe to pass on.
func (sr *StreamRedactor) Write(piece string) string {
	sr.pending += piece
	st := sr.r.load()
	if st == nil {
		out := sr.pending
		sr.pending = ""
		return out
	}
	cut := len(sr.pending) - (st.maxLen - 1)
	if cut <= 0 {
		return ""
	}
	for cut > 0 && !utf8.RuneStart(sr.pending[cut]) {
		cut--
	}
	cut = avoidSplit(sr.pending, cut, st)
	if cut <= 0 {
		return ""
	}
	out, _ := st.redact(sr.pending[:cut])
	sr.pending = sr.pending[cut:]
	return out
}

// Flush returns the held-back rest, redacted.
func (sr *StreamRedactor) Flush() string {
	out := sr.r.Redact(sr.pending)
	sr.pending = ""
	return out
}
