package argschema

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
)

// fastSchemas are inputSchemas the fast path takes (and the first few it
// must leave to the full validation).
var fastSchemas = []string{
	`{"type":"object","properties":{"order_id":{"type":"string","description":"Order id"},` +
		`"fields":{"type":"array","items":{"type":"string","enum":["status","total","items","customer"]}}},` +
		`"required":["order_id"],"additionalProperties":false}`,
	`{"type":"object","properties":{"region":{"type":"string"},"verbose":{"type":"boolean"},` +
		`"nested":{"type":"object","properties":{"flag":{"type":"boolean"}}}},"required":["region"],"additionalProperties":false}`,
	`{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"},"s":{"type":["string","null"]},` +
		`"any":{},"t":true,"e":{"enum":["a","b"]},"o":{"type":"object","additionalProperties":false,"required":["k"]}},"x-extra":1}`,
	`{"type":"object"}`,
	`{"type":"object","properties":{"q":{"type":"array"}},"required":["q","r"]}`,
}

// slowSchemas use what the fast path does not understand.
var slowSchemas = []string{
	`{"type":"object","properties":{"s":{"type":"string","minLength":2}}}`,
	`{"type":"object","properties":{"s":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
	`{"type":"object","properties":{"n":{"type":"integer","minimum":1}}}`,
	`{"type":"object","properties":{"e":{"enum":["a",1]}}}`,
	`{"type":"object","additionalProperties":{"type":"string"}}`,
	`{"type":"object","properties":{"s":{"type":"string","format":"email"}}}`,
	`{"type":"object","properties":{"f":false}}`,
	`{"anyOf":[{"type":"object"}]}`,
}

// fastArgs are argument documents the fuzzer starts from.
var fastArgs = []string{
	`{"order_id":"A-1042","fields":["status","total"]}`,
	`{"order_id":"A-1042","fields":["status","bogus"]}`,
	`{"order_id":"A-1042","extra":1}`,
	`{"fields":[]}`,
	`{"order_id":"A\u002d1","fields":["st\u0061tus"]}`,
	`{"region":"us","verbose":null}`,
	`{"region":null}`,
	`{"region":"us","nested":{"flag":null}}`,
	`{"region":"us","other":null}`,
	`{"n":1,"x":1.5e3,"s":null,"any":{"deep":[1,{"a":null}]},"t":[true],"e":"b","o":{"k":1}}`,
	`{"n":1.0}`, `{"n":1e2}`, `{"n":-0}`, `{"x":1e100000000}`, `{"any":[1e100000000]}`,
	`{"o":{}}`, `{"o":{"k":1,"z":2}}`, `{"e":"c"}`, `{"e":{"a":1}}`,
	`{"q":[],"r":0}`, `{"q":{}}`, `{}`, `[]`, `"x"`, `null`,
	`{"a":1,"a":2}`, `{"region":"us","region":null}`,
}

func compiled(t testing.TB, schema string) *Compiled {
	var a Checker
	return a.get(nil, json.RawMessage(schema))
}

// TestFastPathTakesSimpleSchemas: the common schemas get a fast path, and
// it answers for the usual calls without the full validation; the rest
// have none.
func TestFastPathTakesSimpleSchemas(t *testing.T) {
	for _, s := range fastSchemas {
		if c := compiled(t, s); c.s == nil || c.fast == nil {
			t.Errorf("no fast path for %s", s)
		}
	}
	for _, s := range slowSchemas {
		if c := compiled(t, s); c.fast != nil {
			t.Errorf("a fast path for %s", s)
		}
	}
	c := compiled(t, fastSchemas[0])
	for args, want := range map[string]bool{
		`{"order_id":"A-1042","fields":["status","total"]}`: true,
		`{"order_id":"A-1042"}`:                             true,
		`{"order_id":"A-1042","fields":["bogus"]}`:          false,
		`{"fields":["status"]}`:                             false,
		`{"order_id":"A-1042","other":1}`:                   false,
	} {
		if got := c.fast.accepts([]byte(args), false, c.optional, 1); got != want {
			t.Errorf("fast path on %s: %v, want %v", args, got, want)
		}
	}
	usual := []byte(fastArgs[0])
	if got := testing.AllocsPerRun(100, func() {
		c.fast.accepts(usual, false, c.optional, 1)
	}); got != 0 {
		t.Errorf("the fast path allocates %v times a call", got)
	}
	// What the fast path refuses goes to the full validation, which says
	// why.
	var a Checker
	var slot atomic.Pointer[Compiled]
	err := a.Validate(&slot, json.RawMessage(fastSchemas[0]), 1, json.RawMessage(`{"order_id":7}`), rules.ArgsCheck{})
	if err == nil || !strings.Contains(err.Error(), "at '/order_id'") {
		t.Fatalf("refusal: %v", err)
	}
}

// TestFastPathWorkBound: the fast path accepts nothing the work bound
// refuses.
func TestFastPathWorkBound(t *testing.T) {
	c := compiled(t, fastSchemas[3])
	args := `{"a":[` + strings.Repeat(`1,`, 999) + `1]}`
	var a Checker
	for _, cost := range []int64{1, 1 << 20} {
		full := c.validate(cost, json.RawMessage(args))
		if fast := c.fast.accepts([]byte(args), false, c.optional, cost); fast && full != nil {
			t.Errorf("cost %d: the fast path accepts what the full path refuses: %v", cost, full)
		}
		if err := a.Validate(nil, json.RawMessage(fastSchemas[3]), cost, json.RawMessage(args), rules.ArgsCheck{}); (err == nil) != (full == nil) {
			t.Errorf("cost %d: Validate %v, full path %v", cost, err, full)
		}
	}
}

// FuzzFastPathAgrees: whatever the fast path accepts, the full validation
// accepts too, for any schema and arguments (the fast path never refuses:
// it hands over).
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range append(fastSchemas, slowSchemas...) {
		for _, a := range fastArgs {
			f.Add(s, a)
		}
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		c := compiled(t, schema)
		if c.s == nil || c.fast == nil {
			return
		}
		for _, cost := range []int64{1, 5000} {
			fast := c.fast.accepts([]byte(args), false, c.optional, cost)
			// Arguments the call's one check vouches for are not
			// validated again: the walk over them decides the same.
			if json.Valid([]byte(args)) && c.fast.accepts([]byte(args), true, c.optional, cost) != fast {
				t.Fatalf("the fast path on %s under %s (cost %d) decides otherwise once the arguments are known valid", args, schema, cost)
			}
			if !fast {
				continue
			}
			if err := c.validate(cost, json.RawMessage(args)); err != nil {
				t.Fatalf("the fast path accepts %s under %s (cost %d); the full validation: %v", args, schema, cost, err)
			}
		}
	})
}
