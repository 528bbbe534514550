package host

import (
	"bytes"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
)

// Call ids are "call_" and 24 hex digits, all different, across the
// buffer's refills and from many goroutines at once.
func TestNewCallIDs(t *testing.T) {
	const goroutines, each = 4, 1000 // 48,000 random bytes: several refills
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range each {
				ids[g] = append(ids[g], newCallID())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for _, id := range list {
			hexPart, ok := strings.CutPrefix(id, "call_")
			if b, err := hex.DecodeString(hexPart); !ok || err != nil || len(b) != 12 {
				t.Fatalf("call id %q is not call_ and 24 hex digits", id)
			}
			if seen[id] {
				t.Fatalf("call id %q was handed out twice", id)
			}
			seen[id] = true
		}
	}
}

// The buffer hands out each byte once and clears it; a read larger than
// the buffer goes to the generator directly.
func TestRandBuffer(t *testing.T) {
	tests := []struct {
		name  string
		reads []int
	}{
		{"one id", []int{12}},
		{"up to the end of the buffer", []int{4090, 6}},
		{"across a refill", []int{4090, 12, 12}},
		{"larger than the buffer", []int{5000}},
		{"empty", []int{0, 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r randBuffer
			for _, n := range tt.reads {
				b := make([]byte, n)
				r.read(b)
				if n >= 12 && bytes.Equal(b, make([]byte, n)) {
					t.Fatalf("read(%d) left the bytes zero", n)
				}
				if r.full && !bytes.Equal(r.buf[:r.used], make([]byte, r.used)) {
					t.Fatalf("after read(%d) bytes handed out are still in the buffer", n)
				}
			}
		})
	}
}
