package valueschema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/internal/safeschema"
)

// TestValueValidationPanicBecomesError: should the validator panic anyway,
// the call gets an error, not a crash.
func TestValueValidationPanicBecomesError(t *testing.T) {
	vs, err := Compile(json.RawMessage(`{"type":"object","properties":{"n":{"maximum":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// Bypass the number check: json.Number straight into the validator.
	err = safeschema.Validate(vs.schema, map[string]any{"n": json.Number("1e100000000")})
	if !errors.Is(err, safeschema.ErrValidatorPanic) {
		t.Fatalf("Validate = %v, want ErrValidatorPanic", err)
	}
}
