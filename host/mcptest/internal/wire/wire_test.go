package wire

import (
	"encoding/json"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		code int // 0: parsed
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{``, CodeParseError},
		{`{"jsonrpc":`, CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest},
	} {
		m, err := Parse([]byte(tc.in))
		switch {
		case tc.code == 0 && (err != nil || !m.IsRequest()):
			t.Errorf("%s: %v", tc.in, err)
		case tc.code != 0 && (err == nil || err.Code != tc.code):
			t.Errorf("%s: error %v, want code %d", tc.in, err, tc.code)
		}
	}
}

// IDs compare as values: 7 and 7.0 are one request, "7" another.
func TestIDKey(t *testing.T) {
	if IDKey(json.RawMessage(`7`)) != IDKey(json.RawMessage(`7.0`)) {
		t.Error("7 and 7.0 differ")
	}
	if IDKey(json.RawMessage(`7`)) == IDKey(json.RawMessage(`"7"`)) {
		t.Error(`7 and "7" are the same`)
	}
}

func TestHeaderMatches(t *testing.T) {
	for _, tc := range []struct {
		header, value string
		want          bool
	}{
		{"abc", `"abc"`, true},
		{"=?base64?YWJj?=", `"abc"`, true},
		{"42", `42`, true},
		{"42", `42.5`, false},
		{"true", `true`, true},
		{"abc", `{"a":1}`, false},
	} {
		if got := HeaderMatches(tc.header, json.RawMessage(tc.value)); got != tc.want {
			t.Errorf("HeaderMatches(%q, %s) = %v", tc.header, tc.value, got)
		}
	}
}

// An answer nobody waits for is dropped; the first answer counts.
func TestWaiters(t *testing.T) {
	var w Waiters[int]
	w.Deliver("x", 1)
	answer, done := w.Add("x")
	defer done()
	w.Deliver("x", 2)
	w.Deliver("x", 3)
	if got := <-answer; got != 2 {
		t.Errorf("answer %d, want 2", got)
	}
}
