//go:build linux

package auditlog

import (
	"encoding/binary"
	"os"
	"syscall"
)

// watchMask: the open file lost a name (IN_ATTRIB: its link count
// changed, by unlink or by a rename over it), was renamed (IN_MOVE_SELF)
// or freed (IN_DELETE_SELF). A write does not raise any of them.
const watchMask = syscall.IN_ATTRIB | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

// watchFile watches the file at path (the one the sink just opened) with
// inotify. It returns nil when inotify is not available; the sink then
// checks the file before every decision record instead.
func watchFile(path string) *fileWatch {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	if _, err := syscall.InotifyAddWatch(fd, path, watchMask); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	// Non-blocking, so the runtime poller owns it and Close ends a Read.
	w := &fileWatch{src: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{})}
	// The path may have been replaced between the sink's open and the
	// watch: the first decision record checks.
	w.fired.Store(true)
	go w.run()
	return w
}

// run reads events until stop closes the descriptor. Any event means
// "check before the next decision record"; IN_IGNORED (the watch is gone)
// or a failed read leaves the sink checking every decision record.
func (w *fileWatch) run() {
	defer close(w.done)
	buf := make([]byte, 4096)
	for {
		n, err := w.src.Read(buf)
		if n > 0 {
			if ignored(buf[:n]) {
				w.lost.Store(true)
			}
			w.fired.Store(true)
		}
		if err != nil {
			w.lost.Store(true)
			return
		}
	}
}

// ignored reports whether the events include IN_IGNORED or a queue
// overflow. An event is a 16-byte header (wd, mask, cookie, len) and len
// bytes of name.
func ignored(events []byte) bool {
	const header = 16
	for len(events) >= header {
		mask := binary.NativeEndian.Uint32(events[4:8])
		if mask&(syscall.IN_IGNORED|syscall.IN_Q_OVERFLOW) != 0 {
			return true
		}
		skip := header + int(binary.NativeEndian.Uint32(events[12:16]))
		if skip > len(events) {
			return true
		}
		events = events[skip:]
	}
	return false
}

func (w *fileWatch) close() {
	if w == nil {
		return
	}
	_ = w.src.Close()
	<-w.done
}
