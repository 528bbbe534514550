package argschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/secureparams"
)

// TestArgSchemaHostileNumbers: numbers the JSON Schema validator cannot
// parse are refused with a clear error, never a panic (which would end
// every session of the process).
func TestArgSchemaHostileNumbers(t *testing.T) {
	tests := []struct {
		name, schema, args string
		want               string // substring of the error; "" means valid
	}{
		{"maximum", `{"type":"object","properties":{"n":{"maximum":5}}}`, `{"n":1e100000000}`, "a number at /n"},
		{"minimum", `{"type":"object","properties":{"n":{"minimum":5}}}`, `{"n":-1e100000000}`, "a number at /n"},
		{"exclusiveMaximum", `{"type":"object","properties":{"n":{"exclusiveMaximum":5}}}`, `{"n":1E+1000001}`, "a number at /n"},
		{"multipleOf", `{"type":"object","properties":{"n":{"multipleOf":2}}}`, `{"n":1e100000000}`, "a number at /n"},
		{"uniqueItems", `{"type":"object","properties":{"l":{"uniqueItems":true}}}`, `{"l":[` + strings.Repeat("1.5,", 25) + `1e100000000]}`, "a number at /l/25"},
		{"no numeric keyword", `{"type":"object"}`, `{"n":1e100000000}`, "a number at /n"},
		{"ordinary numbers", `{"type":"object","properties":{"n":{"maximum":1e308,"multipleOf":0.5}}}`, `{"n":1e300}`, ""},
		{"schema number the validator cannot handle", `{"type":"object","properties":{"n":{"multipleOf":1e-100000000}}}`, `{"n":1}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Checker
			err := a.Validate(nil, json.RawMessage(tc.schema), 1, json.RawMessage(tc.args), rules.ArgsCheck{})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "cannot be checked") {
				t.Fatalf("validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestArgSchemaErrorOutputBounded: a value failing every branch of a wide
// anyOf yields a short message, not the validator's whole error tree.
func TestArgSchemaErrorOutputBounded(t *testing.T) {
	branches := make([]string, 500)
	for i := range branches {
		branches[i] = fmt.Sprintf(`{"const":"value-%d-%s"}`, i, strings.Repeat("x", 300))
	}
	schema := `{"type":"object","properties":{"q":{"anyOf":[` + strings.Join(branches, ",") + `]}}}`
	var a Checker
	err := a.Validate(nil, json.RawMessage(schema), 501, json.RawMessage(`{"q":"nope"}`), rules.ArgsCheck{})
	if err == nil {
		t.Fatal("validate = nil, want a mismatch")
	}
	msg := err.Error()
	if !strings.Contains(msg, "at '/q'") || !strings.Contains(msg, "and 492 more") {
		t.Fatalf("message does not name the location and the count left out: %.300s", msg)
	}
	if limit := (maxArgErrorLines+1)*(maxArgErrorLineSize+8) + 200; len(msg) > limit {
		t.Fatalf("message is %d bytes, want at most %d", len(msg), limit)
	}
}

// TestArgSchemaWorkBound: arguments whose size times the schema's expansion
// exceeds the per-call budget are refused before the validator runs.
func TestArgSchemaWorkBound(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	args := json.RawMessage(`{"l":[` + strings.TrimSuffix(strings.Repeat("1,", 999), ",") + `]}`) // 1001 values
	var a Checker
	if err := a.Validate(nil, schema, secureparams.MaxValidationWork/1001, args, rules.ArgsCheck{}); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	err := a.Validate(nil, schema, secureparams.MaxValidationWork/1000, args, rules.ArgsCheck{})
	if err == nil || !strings.Contains(err.Error(), "too large to check") {
		t.Fatalf("beyond the budget: %v, want a refusal", err)
	}
}

// TestArgSchemaMessagesQuoteNoSchemaValue: the refusal the model reads
// names the failed constraint, never a value from the schema (a server
// that learned a secure value could plant it in enum, const, pattern,
// default or a bound).
func TestArgSchemaMessagesQuoteNoSchemaValue(t *testing.T) {
	const planted = "PLANTED-4417"
	tests := []struct {
		name, prop, args, want string
	}{
		{"enum", `{"enum":["` + planted + `","b"],"default":"` + planted + `"}`, `{"v":"c"}`, "'enum'"},
		{"const", `{"const":"` + planted + `"}`, `{"v":"c"}`, "'const'"},
		{"pattern", `{"type":"string","pattern":"^` + planted + `$"}`, `{"v":"c"}`, "'pattern'"},
		{"maximum", `{"maximum":4417}`, `{"v":99999}`, "'maximum'"},
		{"maxLength", `{"maxLength":3}`, `{"v":"` + strings.Repeat("y", 4417) + `"}`, "'maxLength'"},
		{"enum in anyOf", `{"anyOf":[{"enum":["` + planted + `"]},{"const":"` + planted + `"}]}`, `{"v":"c"}`, "'enum'"},
		{"type still said", `{"type":"string","enum":["` + planted + `"]}`, `{"v":1}`, "want string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"v":` + tc.prop + `}}`
			var a Checker
			err := a.Validate(nil, json.RawMessage(schema), 1, json.RawMessage(tc.args), rules.ArgsCheck{})
			if err == nil {
				t.Fatal("validate = nil, want a mismatch")
			}
			msg := err.Error()
			if strings.Contains(msg, planted) || strings.Contains(msg, "4417") {
				t.Errorf("the message quotes the schema: %s", msg)
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "at '/v'") {
				t.Errorf("message %q does not say %s failed at /v", msg, tc.want)
			}
		})
	}
}

// TestArgSchemaOptionalNull: a null for a declared property the schema
// does not require is an omitted argument (SEP-2243 sends no header for
// it); a null anywhere else is checked as the value it is.
func TestArgSchemaOptionalNull(t *testing.T) {
	const schema = `{"type":"object","properties":{"region":{"type":"string"},"verbose":{"type":"boolean"},` +
		`"nested":{"type":"object","properties":{"flag":{"type":"boolean"}}}},"required":["region"],"additionalProperties":false}`
	tests := []struct {
		name, args string
		ok         bool
	}{
		{"optional null", `{"region":"us-east1","verbose":null}`, true},
		{"optional omitted", `{"region":"us-east1"}`, true},
		{"optional wrong type", `{"region":"us-east1","verbose":"yes"}`, false},
		{"required null", `{"region":null}`, false},
		{"undeclared null", `{"region":"us-east1","other":null}`, false},
		{"nested null", `{"region":"us-east1","nested":{"flag":null}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a Checker
			err := a.Validate(nil, json.RawMessage(schema), 1, json.RawMessage(tc.args), rules.ArgsCheck{})
			if (err == nil) != tc.ok {
				t.Fatalf("validate(%s) = %v, want ok %v", tc.args, err, tc.ok)
			}
		})
	}
}
