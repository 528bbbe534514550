// Package progress owns the forwarding of a running call's
// notifications/progress to the turn as tool_progress events.
package progress

import (
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// Forwarder turns a running call's notifications/progress into
// tool_progress events. The connection hands it progress on its reader,
// which must not wait for the turn's consumer, so only the latest progress
// is kept and its own goroutine emits it; Stop ends that goroutine before
// the call's next event (its tool_result), so the two never emit at once.
type Forwarder struct {
	emit  func(event.Event)
	base  event.Event
	start time.Time

	mu     sync.Mutex
	latest *mcpconn.Progress
	wake   chan struct{} // capacity 1: a progress is waiting
	done   chan struct{} // closed by Stop
	exited chan struct{}
}

// Start forwards progress to emit as copies of base, timed from start.
func Start(emit func(event.Event), base event.Event, start time.Time) *Forwarder {
	f := &Forwarder{emit: emit, base: base, start: start,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go f.run()
	return f
}

func (f *Forwarder) run() {
	defer close(f.exited)
	for {
		select {
		case <-f.done:
			return
		case <-f.wake:
		}
		f.mu.Lock()
		p := f.latest
		f.latest = nil
		f.mu.Unlock()
		if p == nil {
			continue
		}
		e := f.base
		progress, ms := p.Progress, time.Since(f.start).Milliseconds()
		e.Progress, e.Text, e.DurationMs = &progress, p.Message, &ms
		if p.Total > 0 {
			total := p.Total
			e.Total = &total
		}
		f.emit(e)
	}
}

// Notify keeps p as the latest progress; it never blocks.
func (f *Forwarder) Notify(p mcpconn.Progress) {
	f.mu.Lock()
	f.latest = &p
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Stop ends the forwarding and waits for the goroutine (a nil f is none).
func (f *Forwarder) Stop() {
	if f == nil {
		return
	}
	close(f.done)
	<-f.exited
}
