package host

import (
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// progressForwarder turns a running call's notifications/progress into
// tool_progress events. The connection hands it progress on its reader,
// which must not wait for the turn's consumer, so only the latest progress
// is kept and its own goroutine emits it; stop ends that goroutine before
// the call's next event (its tool_result), so the two never emit at once.
type progressForwarder struct {
	emit  func(Event)
	base  Event
	start time.Time

	mu     sync.Mutex
	latest *mcpconn.Progress
	wake   chan struct{} // capacity 1: a progress is waiting
	done   chan struct{} // closed by stop
	exited chan struct{}
}

func startProgress(emit func(Event), base Event, start time.Time) *progressForwarder {
	f := &progressForwarder{emit: emit, base: base, start: start,
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{})}
	go f.run()
	return f
}

func (f *progressForwarder) run() {
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

// notify keeps p as the latest progress; it never blocks.
func (f *progressForwarder) notify(p mcpconn.Progress) {
	f.mu.Lock()
	f.latest = &p
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// stop ends the forwarding and waits for the goroutine (a nil f is none).
func (f *progressForwarder) stop() {
	if f == nil {
		return
	}
	close(f.done)
	<-f.exited
}
