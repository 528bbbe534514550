package cmdutil

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestCloseWithinIsBounded(t *testing.T) {
	var out strings.Builder
	release := make(chan struct{})
	defer close(release)
	returned := make(chan struct{})
	go func() {
		CloseWithin(&out, 50*time.Millisecond, func() error { <-release; return nil })
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("closeWithin waited for a close that never ends")
	}
	if !strings.Contains(out.String(), "shutting down took longer than 50ms") {
		t.Errorf("no word of the abandoned shutdown: %q", out.String())
	}

	out.Reset()
	CloseWithin(&out, time.Minute, func() error { return nil })
	if out.Len() != 0 {
		t.Errorf("a prompt close printed %q", out.String())
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 steps"}, {1, "1 step"}, {2, "2 steps"}} {
		if got := Plural(tc.n, "step"); got != tc.want {
			t.Errorf("Plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestWriteJSONKeepsHTML(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(io.Writer, any) error
		want  string
	}{
		{"indented", WriteJSON, "{\n  \"title\": \"<b> & </b>\"\n}\n"},
		{"line", WriteJSONLine, "{\"title\":\"<b> & </b>\"}\n"},
	} {
		var b strings.Builder
		if err := tc.write(&b, map[string]string{"title": "<b> & </b>"}); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}
