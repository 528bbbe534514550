package auditlog

import (
	"io"
	"sync/atomic"
)

// fileWatch tells a FileSink when its open file may have been deleted,
// replaced or moved, so a call costs it no fstat (on Linux: inotify, see
// watch_linux.go). Its goroutine is owned by the watch and ends in close.
type fileWatch struct {
	fired atomic.Bool // an event came: check before the next decision record
	lost  atomic.Bool // the watch stopped seeing events: check every time
	src   io.ReadCloser
	done  chan struct{}
}

// needsCheck reports whether the sink must check its file now, and
// whether the watch is live (then the check compares the path too, which
// also catches a file renamed away). A nil watch always needs the quick
// check.
func (w *fileWatch) needsCheck() (check, watched bool) {
	if w == nil {
		return true, false
	}
	if w.lost.Load() {
		return true, true
	}
	// Cleared before the check, so an event during the check is kept for
	// the next record. Read first: while nothing happens (every call but
	// the first) a call costs a load, not a locked exchange.
	return w.fired.Load() && w.fired.Swap(false), true
}
