package childproc

import "testing"

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"512", 512, true}, {"512B", 512, true}, {"4k", 4 << 10, true}, {"64MiB", 64 << 20, true},
		{"64 mb", 64 << 20, true}, {"4GiB", 4 << 30, true}, {"1TiB", 1 << 40, true}, {" 2G ", 2 << 30, true},
		{"", 0, false}, {"MiB", 0, false}, {"1.5GiB", 0, false}, {"-1", 0, false}, {"4PiB", 0, false},
		{"99999999999999999999", 0, false}, {"17179869184TiB", 0, false}, {"5ib", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseSize: never panics, and what it accepts is a whole number of
// its unit that did not overflow.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64MiB", "4 GiB", "0", "18446744073709551615", "16777216TiB", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil && n != 0 {
			t.Fatalf("ParseSize(%q) = %d with error %v", s, n, err)
		}
	})
}
