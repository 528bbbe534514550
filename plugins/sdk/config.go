package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// decodeConfig parses the configuration object. Errors never quote the
// input: a plugin's configuration may itself hold a secret (a vault token).
func decodeConfig(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("config is not valid JSON (syntax error at byte %d)", syn.Offset)
		}
		return nil, errors.New("config is not valid JSON")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config must be a JSON object, got %s", jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// validateConfig checks config against the plugin's own schema. The error
// lists where and which keyword failed, plus unknown and missing key names,
// but never the offending values.
func validateConfig(schema json.RawMessage, config map[string]any) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("plugin config schema is not valid JSON: %w", err)
	}
	sch, err := safeschema.Compile(doc, "agenthost-plugin-config.json", nil)
	if err != nil {
		return fmt.Errorf("plugin config schema does not compile: %w", err)
	}
	// Round-trip so numbers are in the form the validator expects.
	raw, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if _, err := safeschema.CheckNumbers(inst); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	err = safeschema.Validate(sch, inst)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return fmt.Errorf("config is invalid: %s", describeValidation(verr))
	}
	return err
}

func describeValidation(verr *jsonschema.ValidationError) string {
	var problems []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		where := "/" + strings.Join(e.InstanceLocation, "/")
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			names := append([]string(nil), k.Properties...)
			sort.Strings(names)
			problems = append(problems, fmt.Sprintf("at %s: unknown key(s) %s", where, strings.Join(names, ", ")))
		case *kind.Required:
			problems = append(problems, fmt.Sprintf("at %s: missing required key(s) %s", where, strings.Join(k.Missing, ", ")))
		case *kind.Type:
			problems = append(problems, fmt.Sprintf("at %s: got %s, want %s", where, k.Got, strings.Join(k.Want, " or ")))
		default:
			problems = append(problems, fmt.Sprintf("at %s: fails %q", where, strings.Join(e.ErrorKind.KeywordPath(), "/")))
		}
	}
	walk(verr)
	if len(problems) == 0 {
		return "does not match the plugin's config schema"
	}
	return strings.Join(problems, "; ")
}
