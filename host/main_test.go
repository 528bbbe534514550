package host

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the host starts has an owner that stops it: after the
// tests (hosts closed, turns cancelled) none may be left.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
