package mcpconn

import (
	"strings"
	"testing"
)

// A notifications/progress reaches the call whose token it names while the
// call is registered; anything else is dropped, and the server's message is
// capped.
func TestProgressRoutes(t *testing.T) {
	var r progressRoutes
	var got []Progress
	token, stop := r.add(func(p Progress) { got = append(got, p) })
	long := strings.Repeat("é", maxProgressMessage+10)
	for _, params := range []map[string]any{
		{"progressToken": token, "progress": 1.0, "total": 4.0, "message": "one"},
		{"progressToken": token, "progress": 2.0},
		{"progressToken": token, "progress": 3.0, "message": long},
		{"progressToken": "other", "progress": 9.0},
		{"progressToken": token, "progress": "ten"},
		{"progress": 11.0},
	} {
		r.deliver(params)
	}
	stop()
	r.deliver(map[string]any{"progressToken": token, "progress": 12.0})
	if len(got) != 3 || got[0] != (Progress{Progress: 1, Total: 4, Message: "one"}) || got[1] != (Progress{Progress: 2}) {
		t.Fatalf("delivered %+v", got)
	}
	if m := []rune(got[2].Message); len(m) != maxProgressMessage+1 || m[len(m)-1] != '…' {
		t.Errorf("a long message is not capped: %d runes", len(m))
	}
	if len(r.routes) != 0 {
		t.Errorf("%d routes left after stop", len(r.routes))
	}
	if next, stop2 := r.add(func(Progress) {}); next == token {
		t.Error("a token was reused")
	} else {
		stop2()
	}
}
