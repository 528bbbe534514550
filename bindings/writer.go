package bindings

import (
	"bytes"
	"errors"
	"io"
	"sync"
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
			long = avoidSplit(buf, len(buf)-(st.maxLen-1), st)
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
func avoidSplit(buf []byte, cut int, st *redactState) int {
	cut = max(cut, 0)
	var spans [8]span
	for _, sp := range st.find(bytesView(buf), spans[:0]) {
		if sp.start < cut && sp.end > cut {
			cut = sp.start
		}
	}
	return cut
}
