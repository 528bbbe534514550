package host

import "testing"

// The host's turn ids are of the form TurnSession reads back.
func TestNewTurnIDNamesSession(t *testing.T) {
	for _, session := range []string{"s1", "", "a.b.c"} {
		if got, ok := TurnSession(newTurnID(session)); !ok || got != session {
			t.Fatalf("TurnSession(newTurnID(%q)) = %q, %v", session, got, ok)
		}
	}
}
