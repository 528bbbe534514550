// Package sse writes Server-Sent Events for serve: the stream's headers,
// one event or comment per write, batched flushes, and deadlines that let
// a stream outlast the server's read and write timeouts while its client
// reads; and it streams a turn's event log to a client until the turn,
// the client or the server ends.
package sse

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
)

// Writer writes Server-Sent Events into the response, whose own buffer
// collects them until a flush; each event goes in with one Write.
//
// A stream lasts as long as its turn or its client, beyond the server's
// read and write timeouts (serve.readTimeout, writeTimeout): its request
// has been read, so the read deadline is lifted (passing while the server
// watches for the client leaving, it would end the stream), and each batch
// of writes gets the write timeout anew (extend), so a stream ends when
// its client stops reading, not when it has lasted that long.
type Writer struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// writeTimeout is the serving http.Server's WriteTimeout (0: none).
	writeTimeout time.Duration
}

// Start sets the headers of an event stream, lifts the read deadline and
// writes the status.
func Start(w http.ResponseWriter, r *http.Request, status int) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	sw := &Writer{w: w, rc: http.NewResponseController(w), writeTimeout: serverWriteTimeout(r)}
	liftReadDeadline(sw.rc)
	sw.extend()
	w.WriteHeader(status)
	return sw
}

// extend gives the writes that follow the server's write timeout from now.
func (s *Writer) extend() { extendWriteDeadline(s.rc, s.writeTimeout) }

// serverWriteTimeout is the WriteTimeout of the http.Server serving r.
func serverWriteTimeout(r *http.Request) time.Duration {
	if hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok {
		return hs.WriteTimeout
	}
	return 0
}

func liftReadDeadline(rc *http.ResponseController) { _ = rc.SetReadDeadline(time.Time{}) }

func extendWriteDeadline(rc *http.ResponseController, d time.Duration) {
	if d > 0 {
		_ = rc.SetWriteDeadline(time.Now().Add(d))
	}
}

// StreamThrough makes w an answer that streams as long as it is read (a
// forwarded event stream): like an Writer, the read deadline is lifted
// and each write and flush gets the server's write timeout anew.
func StreamThrough(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	d := serverWriteTimeout(r)
	if d <= 0 {
		return w
	}
	rc := http.NewResponseController(w)
	liftReadDeadline(rc)
	return &extendingWriter{ResponseWriter: w, rc: rc, d: d}
}

type extendingWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func (w *extendingWriter) Write(b []byte) (int, error) {
	extendWriteDeadline(w.rc, w.d)
	return w.ResponseWriter.Write(b)
}

// FlushError is what http.ResponseController.Flush calls.
func (w *extendingWriter) FlushError() error {
	extendWriteDeadline(w.rc, w.d)
	return w.rc.Flush()
}

func (w *extendingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Event writes one event; id 0 writes none. data must be one line (it is
// compact JSON).
func (s *Writer) Event(id int64, typ string, data []byte) error {
	var b [256]byte
	buf := b[:0]
	if id > 0 {
		buf = append(buf, "id: "...)
		buf = strconv.AppendInt(buf, id, 10)
		buf = append(buf, '\n')
	}
	if typ != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, typ...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	s.extend()
	_, err := s.w.Write(buf)
	return err
}

// WriteFrame writes one whole SSE frame as it is (the next Flush gives
// the writes the server's write timeout anew).
func (s *Writer) WriteFrame(frame []byte) error {
	_, err := s.w.Write(frame)
	return err
}

// Comment writes a comment line (a keep-alive).
func (s *Writer) Comment(text string) error {
	s.extend()
	_, err := s.w.Write([]byte(": " + text + "\n\n"))
	return err
}

// Flush sends what was written to the client.
func (s *Writer) Flush() error {
	s.extend()
	return s.rc.Flush()
}

// Stream writes the events of l after `after` until the turn ends, ctx
// ends (the client left) or stop closes.
//
// Flushes cost a write system call (and the client a read) each, so they
// are batched: after a wake-up the writer yields once, letting the turn
// add the rest of a burst (tool_call and approval come together, so do
// assistant and session_end), and the last batch is not flushed here:
// returning lets net/http write it with the end of the response in one go.
// With holdHeaders (a turn that has just started, whose session_start
// comes at once) the response headers are not flushed on their own: they
// wait for the first events and leave with them.
func Stream(ctx context.Context, sw *Writer, l *eventlog.Log, after int64, stop <-chan struct{}, holdHeaders bool) error {
	pending := !holdHeaders // written but not flushed (at first: the headers)
	for {
		evs, _, done, changed, gone := l.Since(after)
		if gone {
			_ = sw.Event(0, "error", []byte(`{"type":"error","kind":"internal","error":"events before this point were dropped (serve.events bounds what a turn keeps)"}`))
			return sw.Flush()
		}
		if len(evs) > 0 {
			sw.extend()
			for _, e := range evs {
				if _, err := sw.w.Write(e); err != nil {
					return err
				}
			}
			after += int64(len(evs))
			pending = true
			continue // more may have come meanwhile
		}
		if done {
			sw.extend()
			return nil // net/http writes the rest with the end of the response
		}
		if pending {
			if err := sw.Flush(); err != nil {
				return err
			}
			pending = false
		}
		select {
		case <-changed:
			runtime.Gosched()
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return nil
		}
	}
}
