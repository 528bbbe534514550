package childproc

// CappedBuffer collects a child's output up to a bound: it keeps at most
// Max bytes and notes (Over) whether more came, and never fails a write, so
// the child is not stopped by a broken pipe. It holds a plain slice, not
// an embedded bytes.Buffer: io.Copy would use a promoted ReadFrom and read
// past the bound.
type CappedBuffer struct {
	Max  int
	buf  []byte
	over bool
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	if room := b.Max - len(b.buf); len(p) > room {
		b.over = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// Bytes returns what was kept.
func (b *CappedBuffer) Bytes() []byte { return b.buf }

// Over reports whether more than Max bytes were written.
func (b *CappedBuffer) Over() bool { return b.over }
