package closer

import (
	"errors"
	"strings"
	"testing"
)

// Close closes last pushed first, every closer even after a failure,
// returns the first failure, and empties the stack.
func TestStackClose(t *testing.T) {
	var order []string
	push := func(s *Stack, name string, err error) {
		s.Push(Func(func() error { order = append(order, name); return err }))
	}
	var s Stack
	push(&s, "a", nil)
	push(&s, "b", errors.New("b failed"))
	push(&s, "c", errors.New("c failed"))
	if err := s.Close(); err == nil || err.Error() != "c failed" {
		t.Errorf("Close: %v, want the first failure (c's)", err)
	}
	if got := strings.Join(order, ","); got != "c,b,a" {
		t.Errorf("closed %s, want c,b,a", got)
	}
	if err := s.Close(); err != nil || len(order) != 3 {
		t.Errorf("a second Close closed again: %v, %v", err, order)
	}
}
