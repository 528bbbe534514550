package sse

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
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
func waitCaughtUp(l *eventlog.Log) {
	for !l.Waiting() {
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
			l := eventlog.New()
			rec := &flushRecorder{header: http.Header{}}
			sw := Start(rec, httptest.NewRequest("GET", "/", nil), http.StatusOK)
			done := make(chan error, 1)
			go func() {
				done <- Stream(context.Background(), sw, l, 0, nil, tc.holdHeaders)
			}()
			waitCaughtUp(l)
			l.Append([]byte("id: 1\nevent: session_start\ndata: {}\n\n"))
			waitCaughtUp(l)
			l.Append([]byte("id: 2\nevent: session_end\ndata: {}\n\n"))
			l.Finish()
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
