package serve

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
)

// sseWriter writes Server-Sent Events into the response, whose own buffer
// collects them until a flush; each event goes in with one Write.
//
// A stream lasts as long as its turn or its client, beyond the server's
// read and write timeouts (serve.readTimeout, writeTimeout): its request
// has been read, so the read deadline is lifted (passing while the server
// watches for the client leaving, it would end the stream), and each batch
// of writes gets the write timeout anew (extend), so a stream ends when
// its client stops reading, not when it has lasted that long.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	// writeTimeout is the serving http.Server's WriteTimeout (0: none).
	writeTimeout time.Duration
}

func startSSE(w http.ResponseWriter, r *http.Request, status int) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), writeTimeout: serverWriteTimeout(r)}
	liftReadDeadline(sw.rc)
	sw.extend()
	w.WriteHeader(status)
	return sw
}

// extend gives the writes that follow the server's write timeout from now.
func (s *sseWriter) extend() { extendWriteDeadline(s.rc, s.writeTimeout) }

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

// streamThrough makes w an answer that streams as long as it is read (a
// forwarded event stream): like an sseWriter, the read deadline is lifted
// and each write and flush gets the server's write timeout anew.
func streamThrough(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
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

// event writes one event; id 0 writes none. data must be one line (it is
// compact JSON).
func (s *sseWriter) event(id int64, typ string, data []byte) error {
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

func (s *sseWriter) comment(text string) error {
	s.extend()
	_, err := s.w.Write([]byte(": " + text + "\n\n"))
	return err
}

func (s *sseWriter) flush() error {
	s.extend()
	return s.rc.Flush()
}

// streamLog writes the events of l after `after` until the turn ends, ctx
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
func streamLog(ctx context.Context, sw *sseWriter, l *eventLog, after int64, stop <-chan struct{}, holdHeaders bool) error {
	pending := !holdHeaders // written but not flushed (at first: the headers)
	for {
		evs, _, done, changed, gone := l.since(after)
		if gone {
			_ = sw.event(0, "error", []byte(`{"type":"error","kind":"internal","error":"events before this point were dropped (serve.events bounds what a turn keeps)"}`))
			return sw.flush()
		}
		if len(evs) > 0 {
			sw.extend()
			for _, e := range evs {
				if _, err := sw.w.Write(e.frame); err != nil {
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
			if err := sw.flush(); err != nil {
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

// eventEncodeError replaces an event that cannot be encoded.
const eventEncodeError = `{"type":"error","kind":"internal","error":"an event could not be encoded"}`

// appendFrame appends the SSE frame of a turn's event number id: its id,
// its type as the event name, its JSON as the data.
func appendFrame(dst []byte, id int64, e *host.Event) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, id, 10)
	if e.Type != "" {
		dst = append(dst, "\nevent: "...)
		dst = append(dst, e.Type...)
	}
	dst = append(dst, "\ndata: "...)
	if enc, err := appendEventJSON(dst, e); err == nil {
		dst = enc
	} else {
		dst = append(dst, eventEncodeError...)
	}
	return append(dst, "\n\n"...)
}

// Frames are cut from shared chunks: a turn's usual handful of events
// costs one allocation, not one each.
const (
	frameChunk   = 2 << 10
	minFrameRoom = 256 // a chunk with less room left is not started on
)

// frameArena hands out the frames of one turn's events. Only the turn's
// goroutine uses it; a frame handed out is never written again (later
// frames go after it, or into a new chunk), so streams read it freely.
type frameArena struct{ buf []byte }

func (a *frameArena) frame(id int64, e *host.Event) []byte {
	if cap(a.buf)-len(a.buf) < minFrameRoom {
		a.buf = make([]byte, 0, frameChunk)
	}
	start, room := len(a.buf), cap(a.buf)
	a.buf = appendFrame(a.buf, id, e)
	f := a.buf[start:len(a.buf):len(a.buf)]
	if cap(a.buf) != room {
		// The frame outgrew the chunk, and appending moved all to an
		// array up to twice the frame's size: the log keeps a copy of
		// just the frame, and the next frame starts a new chunk.
		f, a.buf = slices.Clip(slices.Clone(f)), nil
	}
	return f
}

// broadcaster fans approval changes out to the approvals streams. A slow
// subscriber loses events rather than slowing the queue (the page
// re-reads the list on each event, so one that arrives is enough).
//
// Each identity holds at most maxPer streams
// (serve.maxApprovalStreamsPerIdentity); past it, its new ones are
// refused, and one identity's streams never refuse or close another's.
// The streams in all are bounded by maxPer times the identities
// configured.
type broadcaster struct {
	maxPer int

	mu     sync.Mutex
	subs   map[chan watchEvent]string // the subscriber's identity
	per    map[string]int
	closed bool
}

type watchEvent struct{ typ, id string }

// errTooManyStreams refuses a subscriber whose identity holds maxPer.
var errTooManyStreams = errors.New("this identity holds serve.maxApprovalStreamsPerIdentity approvals streams; close some first")

func newBroadcaster(maxPer int) *broadcaster {
	return &broadcaster{maxPer: maxPer, subs: map[chan watchEvent]string{}, per: map[string]int{}}
}

// subscribe returns who's channel of changes (closed when the broadcaster
// is) and the function that ends the subscription.
func (b *broadcaster) subscribe(who string) (<-chan watchEvent, func(), error) {
	ch := make(chan watchEvent, 16)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		close(ch)
		return ch, func() {}, nil
	case b.per[who] >= b.maxPer:
		return nil, nil, errTooManyStreams
	}
	b.subs[ch] = who
	b.per[who]++
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			b.dropLocked(ch)
		}
	}, nil
}

func (b *broadcaster) dropLocked(ch chan watchEvent) {
	who := b.subs[ch]
	delete(b.subs, ch)
	if b.per[who]--; b.per[who] == 0 {
		delete(b.per, who)
	}
	close(ch)
}

func (b *broadcaster) publish(typ, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- watchEvent{typ, id}:
		default:
		}
	}
}

func (b *broadcaster) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for ch := range b.subs {
		b.dropLocked(ch)
	}
}
