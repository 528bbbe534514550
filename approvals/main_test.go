package approvals

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine this package starts (FileSink syncers, Prompt readers)
// has an owner that stops it; goleak checks the tests leave none behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func asFieldError(err error, target **FieldError) bool { return errors.As(err, target) }
