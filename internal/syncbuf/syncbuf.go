// Package syncbuf owns Buffer, the tests' bytes.Buffer that a process or
// goroutine may write while the test reads it.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe to read (String) while others write.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
