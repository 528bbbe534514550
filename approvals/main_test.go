package approvals

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine this package starts (Queue and StoreApprover waiters) has
// an owner that stops it; goleak checks the tests leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
