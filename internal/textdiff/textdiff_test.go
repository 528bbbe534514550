package textdiff

import (
	"strings"
	"testing"
)

func TestUnified(t *testing.T) {
	tests := []struct {
		name, old, new, want string
		maxLines             int
	}{
		{name: "equal", old: "a\n", new: "a\n", want: ""},
		{name: "new file", old: "", new: "x\ny\n", want: "--- old\n+++ new\n@@ -1,0 +1,2 @@\n+x\n+y\n"},
		{name: "one line changed", old: "a\nb\nc\nd\ne\n", new: "a\nb\nC\nd\ne\n",
			want: "--- old\n+++ new\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n"},
		{name: "no newline at end", old: "a", new: "b",
			want: "--- old\n+++ new\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{name: "cut", old: "", new: "1\n2\n3\n4\n", maxLines: 4, want: "--- old\n+++ new\n@@ -1,0 +1,4 @@\n+1\n… 3 more lines\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unified("old", "new", tt.old, tt.new, 1, tt.maxLines); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestUnifiedTooDifferent(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 3000; i++ {
		a.WriteString("a" + strings.Repeat("x", i%7) + "\n")
		b.WriteString("b" + strings.Repeat("y", i%5) + "\n")
	}
	got := Unified("old", "new", a.String(), b.String(), 3, 100)
	if !strings.Contains(got, "too different") {
		t.Errorf("got %q", got)
	}
}

func BenchmarkUnified(b *testing.B) {
	old := strings.Repeat("line\n", 1000)
	new := old[:2500] + "changed\n" + old[2500:]
	for b.Loop() {
		Unified("old", "new", old, new, 3, 200)
	}
}
