// Package closer owns the closer stack of what a host (and the
// composition root building one) has opened: pushed as each step
// succeeds, closed last first, once, whether a later step failed or the
// host is closed.
package closer

import (
	"io"
	"log/slog"
)

// Stack is a stack of closers; its zero value is empty.
type Stack []io.Closer

// Push adds closers; Close closes the last pushed first.
func (s *Stack) Push(c ...io.Closer) { *s = append(*s, c...) }

// Close closes every closer, last first, and empties the stack.
// It returns the first error.
func (s *Stack) Close() error {
	var first error
	for i := len(*s) - 1; i >= 0; i-- {
		if err := (*s)[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	*s = nil
	return first
}

// Func is a func as an io.Closer.
type Func func() error

func (f Func) Close() error { return f() }

// Logged is a closer whose failure is logged as Message.
type Logged struct {
	io.Closer
	Logger  *slog.Logger
	Message string
}

func (l Logged) Close() error {
	err := l.Closer.Close()
	if err != nil {
		l.Logger.Error(l.Message, "err", err)
	}
	return err
}
