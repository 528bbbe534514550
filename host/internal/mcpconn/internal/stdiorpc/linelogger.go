package stdiorpc

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// LineLogger turns a child's stderr into debug log lines, and keeps the
// last few (see Tail) for the error of a server that fails to start.
type LineLogger struct {
	logger *slog.Logger
	msg    string
	mu     sync.Mutex
	buf    []byte
	last   []string // at most stderrTailLines, each at most stderrTailLineLen
}

// NewLineLogger is a writer that logs each line written to it at debug
// level, as msg with the line in "line" (a plugin's log output, say).
func NewLineLogger(logger *slog.Logger, msg string) *LineLogger {
	return &LineLogger{logger: logger, msg: msg}
}

// The stderr kept for errors: the last lines, each cut.
const (
	stderrTailLines   = 5
	stderrTailLineLen = 300
)

// Write logs each line of p, an unfinished one kept for the next write.
func (l *LineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		l.line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64*1024 {
		l.line(string(l.buf))
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *LineLogger) line(text string) {
	l.logger.Debug(l.msg, "line", text)
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if len(text) > stderrTailLineLen {
		text = text[:stderrTailLineLen] + "…"
	}
	if len(l.last) == stderrTailLines {
		copy(l.last, l.last[1:])
		l.last = l.last[:stderrTailLines-1]
	}
	l.last = append(l.last, text)
}

// Tail returns the last lines written, an unfinished one included.
func (l *LineLogger) Tail() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.last)
	if rest := strings.TrimSpace(string(l.buf)); rest != "" {
		out = append(out, rest)
	}
	return out
}
