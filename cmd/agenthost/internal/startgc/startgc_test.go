package startgc

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestInitHoldsTheCollectorUntilRestore: from init to Restore GOGC is
// initPercent, after it the setting the process had (100 without GOGC);
// a GOGC of the environment is never changed.
func TestInitHoldsTheCollectorUntilRestore(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		if held {
			t.Fatal("init changed the collector's setting although GOGC is set")
		}
		return
	}
	if got := debug.SetGCPercent(initPercent); got != initPercent || !held {
		t.Fatalf("before Restore: GOGC %d, held %v; want %d, true", got, held, initPercent)
	}
	Restore()
	if got := debug.SetGCPercent(100); got != 100 || saved != 100 || held {
		t.Fatalf("after Restore: GOGC %d (saved %d, held %v), want 100", got, saved, held)
	}
	Restore() // a second call changes nothing
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after a second Restore: GOGC %d, want 100", got)
	}
}
