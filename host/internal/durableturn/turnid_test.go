package durableturn

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// newTurnID is a fresh turn id of session, as host makes them.
func newTurnID(session string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return NewTurnID(session, time.Now().UnixNano(), hex.EncodeToString(b[:]))
}

// A turn id names its session, and only its own: a session whose id
// begins with another's, and a string that only looks like a turn id, are
// told apart.
func TestTurnSession(t *testing.T) {
	fresh := newTurnID("s1")
	nested := newTurnID("s1." + strings.TrimPrefix(newTurnID("x"), "x."))
	for _, tc := range []struct {
		id, session string
		ok          bool
	}{
		{fresh, "s1", true},
		{newTurnID(""), "", true},
		{newTurnID("a.b.c"), "a.b.c", true},
		{nested, nested[:len(nested)-TurnIDTail], true},
		{"s1.1", "", false},
		{"s1.0123456789abcdef.0123456", "", false},  // random part too short
		{"s1.0123456789abcdeF.01234567", "", false}, // not lower-case hex
		{"s1.0123456789abcdef-01234567", "", false}, // no dot
		{"s1-0123456789abcdef.01234567", "", false}, // no dot after the session
		{"s1.0123456789abcdef.0123456g", "", false}, // not hex
		{".0123456789abcdef.01234567", "", true},    // the empty session
		{"0123456789abcdef.01234567", "", false},    // no room for the dot
	} {
		got, ok := TurnSession(tc.id)
		if ok != tc.ok || (ok && got != tc.session) {
			t.Errorf("TurnSession(%q) = %q, %v; want %q, %v", tc.id, got, ok, tc.session, tc.ok)
		}
	}
	// The session "s1" lists by the prefix "s1.", which the nested
	// session's turns also have: they are not s1's.
	if s, _ := TurnSession(nested); s == "s1" || !strings.HasPrefix(nested, "s1.") {
		t.Fatalf("%q is taken for a turn of s1", nested)
	}
}

func FuzzTurnSession(f *testing.F) {
	f.Add("s1", "s1.0123456789abcdef.01234567")
	f.Add("", ".0123456789abcdef.01234567")
	f.Fuzz(func(t *testing.T, session, id string) {
		// A fresh id always names its session.
		if got, ok := TurnSession(newTurnID(session)); !ok || got != session {
			t.Fatalf("TurnSession(newTurnID(%q)) = %q, %v", session, got, ok)
		}
		// Any id it accepts is its session plus a tail of the fresh form.
		if got, ok := TurnSession(id); ok && (len(id) != len(got)+TurnIDTail || !strings.HasPrefix(id, got+".")) {
			t.Fatalf("TurnSession(%q) = %q", id, got)
		}
	})
}
