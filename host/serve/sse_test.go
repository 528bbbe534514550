package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// flushRecorder is a ResponseWriter that remembers, at each Flush, what
// the body held by then.
type flushRecorder struct {
	header  http.Header
	body    strings.Builder
	flushes []string
}

func (r *flushRecorder) Header() http.Header         { return r.header }
func (r *flushRecorder) WriteHeader(int)             {}
func (r *flushRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *flushRecorder) Flush()                      { r.flushes = append(r.flushes, r.body.String()) }

// waitCaughtUp returns once a stream of l waits for l's next change.
func waitCaughtUp(l *eventLog) {
	for !l.waiting() {
		runtime.Gosched()
	}
}

// A new turn's stream sends its headers with the first events, not alone
// (one write and one client read fewer per turn); a reconnecting stream
// sends them at once, since its next event may be far off.
func TestStreamHoldsHeadersForTheFirstEvents(t *testing.T) {
	tests := []struct {
		name        string
		holdHeaders bool
		firstFlush  string // what the body held at the first flush
	}{
		{"new turn", true, "id: 1\nevent: session_start\ndata: {}\n\n"},
		{"reconnect", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newEventLog()
			rec := &flushRecorder{header: http.Header{}}
			sw := startSSE(rec, httptest.NewRequest("GET", "/", nil), http.StatusOK)
			done := make(chan error, 1)
			go func() {
				done <- streamLog(context.Background(), sw, l, 0, nil, tc.holdHeaders)
			}()
			waitCaughtUp(l)
			l.append([]byte("id: 1\nevent: session_start\ndata: {}\n\n"))
			waitCaughtUp(l)
			l.append([]byte("id: 2\nevent: session_end\ndata: {}\n\n"))
			l.finish()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if len(rec.flushes) == 0 || rec.flushes[0] != tc.firstFlush {
				t.Fatalf("flushes %q, want the first to hold %q", rec.flushes, tc.firstFlush)
			}
			want := "id: 1\nevent: session_start\ndata: {}\n\nid: 2\nevent: session_end\ndata: {}\n\n"
			if got := rec.body.String(); got != want {
				t.Fatalf("body %q, want %q", got, want)
			}
		})
	}
}

// A reader that waits is woken by the next event and by the end of the
// turn; a reader with events to take is given no channel.
func TestEventLogWakesWaitingReaders(t *testing.T) {
	tests := []struct {
		name   string
		change func(l *eventLog)
		done   bool
	}{
		{"append", func(l *eventLog) { l.append([]byte("id: 2\nevent: assistant\ndata: {}\n\n")) }, false},
		{"finish", (*eventLog).finish, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newEventLog()
			l.append([]byte("id: 1\nevent: session_start\ndata: {}\n\n"))
			if evs, _, _, changed, _ := l.since(0); len(evs) != 1 || changed != nil {
				t.Fatalf("since(0): %d events, channel %v; want 1 and none", len(evs), changed)
			}
			if l.waiting() {
				t.Fatal("a reader that took events counts as waiting")
			}
			_, _, _, changed, _ := l.since(1)
			if changed == nil || !l.waiting() {
				t.Fatal("a caught-up reader got no channel to wait on")
			}
			tc.change(l)
			<-changed // closed by the change
			if l.waiting() {
				t.Fatal("the change left a channel nobody asked for")
			}
			if _, _, done, _, _ := l.since(1); done != tc.done {
				t.Fatalf("done %v, want %v", done, tc.done)
			}
		})
	}
}
