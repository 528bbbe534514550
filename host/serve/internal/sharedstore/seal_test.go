package sharedstore

import (
	"bytes"
	"strings"
	"testing"
)

var testSealKey = bytes.Repeat([]byte{7}, 32)

// TestSealKey: the key is 32 bytes in hex or base64; a sealed record
// opens for its own session alone and with its own key alone.
func TestSealKey(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{strings.Repeat("ab", 32), true},
		{" " + strings.Repeat("AB", 32) + "\n", true},
		{"BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=", true},
		{strings.Repeat("ab", 31), false},
		{"", false},
		{"not a key", false},
	} {
		if _, err := ParseSealKey(tt.in); (err == nil) != tt.ok {
			t.Errorf("ParseSealKey(%q): %v, want ok %v", tt.in, err, tt.ok)
		}
	}
	sl, _ := NewSealer(testSealKey)
	sealed, err := sl.Seal("s1", map[string]string{"token": "v"})
	if err != nil || strings.Contains(sealed, "v\"") {
		t.Fatalf("seal: %q %v", sealed, err)
	}
	if got, err := sl.Open("s1", sealed); err != nil || got["token"] != "v" {
		t.Errorf("open: %v %v", got, err)
	}
	if _, err := sl.Open("s2", sealed); err == nil {
		t.Error("a sealed record opened for another session")
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open("s1", sealed); err == nil {
		t.Error("a sealed record opened with another key")
	}
}

func FuzzParseSealKey(f *testing.F) {
	f.Add(strings.Repeat("ab", 32))
	f.Add("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
	f.Fuzz(func(t *testing.T, in string) {
		if key, err := ParseSealKey(in); err == nil && len(key) != 32 {
			t.Fatalf("a key of %d bytes", len(key))
		}
	})
}

func FuzzOpenSealed(f *testing.F) {
	sl, _ := NewSealer(testSealKey)
	sealed, _ := sl.Seal("s1", map[string]string{"token": "v"})
	f.Add(sealed)
	f.Add("v1:")
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := sl.Open("s1", in); err != nil && err != ErrUnseal {
			t.Fatalf("open: %v is not ErrUnseal", err)
		}
	})
}
