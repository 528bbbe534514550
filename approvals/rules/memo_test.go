package rules

import (
	"testing"
)

// The memo keeps at most max values; past that it computes each time and
// still answers right.
func TestMemoIsBounded(t *testing.T) {
	tests := []struct {
		name      string
		max, keys int
		wantKept  int
		wantCalls int // computes over two rounds of every key
	}{
		{"room for all: computed once each", 4, 3, 3, 3},
		{"full: the rest computed every time", 2, 5, 2, 2 + 3*2},
		{"no room", 0, 3, 0, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMemo[int, int](tt.max)
			calls := 0
			for range 2 {
				for k := range tt.keys {
					if got := m.get(k, func() int { calls++; return k * 10 }); got != k*10 {
						t.Fatalf("get(%d) = %d, want %d", k, got, k*10)
					}
				}
			}
			if m.len() != tt.wantKept || calls != tt.wantCalls {
				t.Errorf("kept %d, computed %d times; want %d, %d", m.len(), calls, tt.wantKept, tt.wantCalls)
			}
		})
	}
}
