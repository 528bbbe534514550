package mcpconn

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := backoff(i + 1); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := backoff(100); got != 30*time.Second {
		t.Errorf("cap: %s", got)
	}
}
