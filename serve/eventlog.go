package serve

import (
	"sync"
)

// maxTurnEvents bounds the events a turn keeps for clients that reconnect;
// past it the oldest are dropped (a reconnect that asks for one of them
// gets 410 Gone).
const maxTurnEvents = 10_000

// eventLog is one turn's events, encoded once, numbered from 1. Readers
// wait on a channel that the next change closes. It is made only when a
// reader asks for it: a turn whose events come faster than its stream
// takes them makes and closes none.
type eventLog struct {
	mu      sync.Mutex
	first   int64 // number of events[0]
	events  []sseEvent
	done    bool
	changed chan struct{} // nil while no reader waits
}

// sseEvent is one event's whole SSE frame (id, event name, data).
type sseEvent struct {
	frame []byte
}

func newEventLog() *eventLog { return &eventLog{first: 1} }

func (l *eventLog) append(frame []byte) {
	l.mu.Lock()
	if len(l.events) == maxTurnEvents {
		copy(l.events, l.events[1:])
		l.events = l.events[:len(l.events)-1]
		l.first++
	}
	l.events = append(l.events, sseEvent{frame: frame})
	l.wake()
	l.mu.Unlock()
}

func (l *eventLog) finish() {
	l.mu.Lock()
	l.done = true
	l.wake()
	l.mu.Unlock()
}

// wake closes the channel readers wait on, if one was handed out; l.mu is
// held.
func (l *eventLog) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// waiting reports whether a reader holds the channel of the next change
// (tests use it to know that a stream has caught up).
func (l *eventLog) waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed != nil
}

// since returns the events numbered after `after`, the number of the
// first of them, whether the turn has ended, and a channel closed at the
// next change. gone reports that events after `after` were dropped.
func (l *eventLog) since(after int64) (evs []sseEvent, first int64, done bool, changed <-chan struct{}, gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if after+1 < l.first {
		return nil, 0, l.done, nil, true
	}
	i := after + 1 - l.first
	if i < int64(len(l.events)) {
		evs = l.events[i:len(l.events):len(l.events)]
	}
	if len(evs) > 0 || l.done {
		// The reader has something to do (or nothing to wait for); it
		// asks again before it waits.
		return evs, after + 1, l.done, nil, false
	}
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return nil, after + 1, false, l.changed, false
}

// eventLimits bound what the event logs keep (serve.events).
type eventLimits struct {
	maxResult  int64 // the content of one tool_result
	maxSession int64 // one log: a session keeps only its latest turn's
	maxTotal   int64 // every log of the server
}
