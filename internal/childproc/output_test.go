package childproc

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		max    int
		want   string
		over   bool
	}{
		{"under", []string{"ab", "cd"}, 8, "abcd", false},
		{"exactly", []string{"abcd"}, 4, "abcd", false},
		{"over in one write", []string{"abcdef"}, 4, "abcd", true},
		{"over across writes", []string{"abc", "def", "g"}, 4, "abcd", true},
		{"zero", []string{"a"}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &CappedBuffer{Max: tt.max}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if string(b.Bytes()) != tt.want || b.Over() != tt.over {
				t.Errorf("kept %q over %t, want %q %t", b.Bytes(), b.Over(), tt.want, tt.over)
			}
		})
	}
	// io.Copy goes through Write, so the bound holds.
	b := &CappedBuffer{Max: 10}
	if _, err := io.Copy(b, bytes.NewReader([]byte(strings.Repeat("x", 1000)))); err != nil || len(b.Bytes()) != 10 || !b.Over() {
		t.Errorf("io.Copy kept %d bytes, over %t, %v", len(b.Bytes()), b.Over(), err)
	}
}
