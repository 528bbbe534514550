package serve

import (
	"sync"
)

// maxTurnEvents bounds the events a turn keeps for clients that reconnect;
// past it the oldest are dropped (a reconnect that asks for one of them
// gets 410 Gone).
const maxTurnEvents = 10_000

// eventLog is one turn's events, encoded once, numbered from 1. Readers
// wait on a channel that is closed (and replaced) at every append.
type eventLog struct {
	mu      sync.Mutex
	first   int64 // number of events[0]
	events  []sseEvent
	done    bool
	changed chan struct{}
}

type sseEvent struct {
	typ  string
	data []byte
}

func newEventLog() *eventLog { return &eventLog{first: 1, changed: make(chan struct{})} }

func (l *eventLog) append(typ string, data []byte) {
	l.mu.Lock()
	if len(l.events) == maxTurnEvents {
		copy(l.events, l.events[1:])
		l.events = l.events[:len(l.events)-1]
		l.first++
	}
	l.events = append(l.events, sseEvent{typ: typ, data: data})
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *eventLog) finish() {
	l.mu.Lock()
	l.done = true
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// since returns the events numbered after `after`, the number of the
// first of them, whether the turn has ended, and a channel closed at the
// next change. gone reports that events after `after` were dropped.
func (l *eventLog) since(after int64) (evs []sseEvent, first int64, done bool, changed <-chan struct{}, gone bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if after+1 < l.first {
		return nil, 0, l.done, l.changed, true
	}
	i := after + 1 - l.first
	if i < int64(len(l.events)) {
		evs = l.events[i:len(l.events):len(l.events)]
	}
	return evs, after + 1, l.done, l.changed, false
}
