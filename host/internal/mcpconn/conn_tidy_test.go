package mcpconn

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestTidyError(t *testing.T) {
	inner := fmt.Errorf("failed to send request: %w", fmt.Errorf("failed to send request: %w", io.ErrUnexpectedEOF))
	err := tidyError(fmt.Errorf("initialize: transport error: %w", inner))
	if got, want := err.Error(), "initialize: transport error: failed to send request: unexpected EOF"; got != want {
		t.Errorf("tidyError = %q, want %q", got, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the tidied error lost its chain")
	}
	plain := errors.New("a: b: a")
	if tidyError(plain) != plain {
		t.Error("an error without a repeated segment was rewrapped")
	}
}
