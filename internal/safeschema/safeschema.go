// Package safeschema is the one place the module compiles and runs JSON
// Schemas (github.com/santhosh-tekuri/jsonschema/v6). It owns three rules
// that every caller needs:
//
//   - no schema is ever loaded from a URL: a $ref outside the document fails
//     compilation (the library still resolves the draft metaschemas from its
//     embedded copies);
//   - no number reaches the validator that it cannot handle: jsonschema/v6
//     v6.0.3 parses numbers with big.Rat.SetString, ignores a failure and
//     dereferences the nil result (a literal such as 1e100000000 under
//     minimum, maximum, exclusiveMinimum/Maximum, multipleOf or uniqueItems
//     panics, in an instance or, through the metaschema, in a schema);
//     Compile and CheckNumbers refuse such literals first;
//   - a panic inside the library is turned into an error wrapping
//     ErrValidatorPanic, never swallowed and never allowed to end the
//     process.
package safeschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Number literal limits. A literal longer than MaxNumberLength characters,
// or with a decimal exponent beyond ±MaxNumberExponent, is refused: the
// validator could not parse it (big.Rat refuses exponents beyond 10^6), or
// would spend ever more time on it (it parses a number afresh for every
// enum member it compares; 1e9999 costs about 100 µs a parse, 1e999 about
// 6 µs). No tool argument needs such a number: float64 spans 5e-324 to
// 1.8e308, and a 256-bit integer has 78 digits.
const (
	MaxNumberLength   = 400
	MaxNumberExponent = 1000
)

// ErrRemoteSchema is the loader's answer to every URL it is asked to fetch.
var ErrRemoteSchema = errors.New("refusing to load a schema from a URL")

// ErrValidatorPanic is wrapped by Compile and Validate when the library
// panicked.
var ErrValidatorPanic = errors.New("the JSON Schema validator failed internally")

// ErrNumber is wrapped by *NumberError.
var ErrNumber = errors.New("number the validator cannot handle")

// NumberError names where a number the validator cannot handle sits, never
// the number itself (it may be a secure value).
type NumberError struct {
	// Location is a JSON pointer into the document ("" for the root).
	Location string
}

func (e *NumberError) Error() string {
	loc := e.Location
	if loc == "" {
		loc = "/"
	}
	return fmt.Sprintf("a number at %s has more than %d characters or an exponent beyond ±%d, which the validator cannot handle", loc, MaxNumberLength, MaxNumberExponent)
}

func (e *NumberError) Unwrap() error { return ErrNumber }

// Loader refuses every URL (it wraps ErrRemoteSchema).
type Loader struct{}

// Load implements jsonschema.URLLoader.
func (Loader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%w: %s", ErrRemoteSchema, url)
}

// NumberOK reports whether the validator can handle the JSON number literal
// lit. It reads the exponent only when there is one, so the common case is
// one short scan.
func NumberOK(lit string) bool {
	if len(lit) > MaxNumberLength {
		return false
	}
	i := strings.IndexAny(lit, "eE")
	if i < 0 {
		return true
	}
	digits := strings.TrimLeft(strings.TrimLeft(lit[i+1:], "+-"), "0")
	if len(digits) > 6 {
		return false
	}
	if digits == "" {
		return true
	}
	exp, err := strconv.Atoi(digits)
	return err == nil && exp <= MaxNumberExponent
}

// CheckNumbers walks a decoded JSON document (as jsonschema.UnmarshalJSON or
// encoding/json with UseNumber produce) and returns how many JSON values it
// holds, and a *NumberError for the first number the validator cannot
// handle. Numbers decoded as float64 or integers are always fine.
func CheckNumbers(doc any) (int, error) {
	var w numberWalk
	if w.walk(doc) {
		return w.values, nil
	}
	var b strings.Builder
	for i := len(w.bad) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(w.bad[i]))
	}
	return w.values, &NumberError{Location: b.String()}
}

// numberWalk is CheckNumbers' state: a method rather than a closure, so
// the common case allocates nothing.
type numberWalk struct {
	values int
	bad    []string // path to the bad number, innermost first
}

func (w *numberWalk) walk(v any) bool {
	w.values++
	switch v := v.(type) {
	case json.Number:
		return NumberOK(string(v))
	case map[string]any:
		for k, e := range v {
			if !w.walk(e) {
				w.bad = append(w.bad, k)
				return false
			}
		}
	case []any:
		for i, e := range v {
			if !w.walk(e) {
				w.bad = append(w.bad, strconv.Itoa(i))
				return false
			}
		}
	}
	return true
}

// Compile compiles a decoded schema document held in memory under url with
// draft (the document's $schema, when present, wins), with the refusing
// loader. A number the validator cannot handle, anywhere in the document, is
// an error wrapping ErrNumber; a panic of the library one wrapping
// ErrValidatorPanic.
func Compile(doc any, url string, draft *jsonschema.Draft) (s *jsonschema.Schema, err error) {
	if _, err := CheckNumbers(doc); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("%w while compiling: %v", ErrValidatorPanic, r)
		}
	}()
	c := jsonschema.NewCompiler()
	if draft != nil {
		c.DefaultDraft(draft)
	}
	c.UseLoader(Loader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Validate runs s.Validate(v), turning a panic of the library into an error
// wrapping ErrValidatorPanic. The panic's own text is not kept: the
// instance may hold secure values. Callers that validate untrusted
// instances should run CheckNumbers first, which names the problem.
func Validate(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w while validating (%T)", ErrValidatorPanic, r)
		}
	}()
	return s.Validate(v)
}
