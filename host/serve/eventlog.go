package serve

import (
	"container/list"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host"
)

// What served sessions keep of their turns' events is bounded
// (docs/config.md, "serve.events"):
//
//   - one tool_result event: its content is at most maxResult bytes; a
//     larger one is replaced by the text the model was given for it (images,
//     audio and blobs summarised), cut there with a note (boundResult);
//   - one session: only its latest turn is kept, with at most maxTurnEvents
//     events and maxSession bytes of them; past either the oldest are
//     dropped (the newest is always kept);
//   - every session: at most maxTotal bytes in all (eventBudget). Past it,
//     turns that have ended lose all their events, the longest ended first;
//     when no ended turn has any left, the turn adding an event drops its
//     own oldest. A running turn never loses events to another session.
//
// A client that asks for dropped events (a reconnect with an older
// Last-Event-ID) gets 410 Gone, or an error event when its stream falls
// behind the drops.

// maxTurnEvents bounds the events a turn keeps.
const maxTurnEvents = 10_000

// eventLimits bound what the event logs keep (serve.events).
type eventLimits struct {
	maxResult  int64 // the content of one tool_result
	maxSession int64 // one log: a session keeps only its latest turn's
	maxTotal   int64 // every log of the server
}

// eventBudget is the bytes every event log of a server keeps, together.
type eventBudget struct {
	lim  eventLimits
	used atomic.Int64 // changed under the lock of the log whose events change

	mu    sync.Mutex
	ended list.List // *eventLog of ended turns that hold events, longest ended first
}

func newEventBudget(lim eventLimits) *eventBudget { return &eventBudget{lim: lim} }

// newLog returns an empty log counted in b.
func (b *eventBudget) newLog() *eventLog {
	l := newEventLog()
	l.budget = b
	return l
}

// eventLog is one turn's events, encoded once, numbered from 1. Readers
// wait on a channel that the next change closes. It is made only when a
// reader asks for it: a turn whose events come faster than its stream
// takes them makes and closes none.
//
// A slice of events handed to a reader is never written again: dropping
// events copies the ones kept into a new array.
type eventLog struct {
	budget *eventBudget // nil: bounded by maxTurnEvents only

	mu       sync.Mutex
	first    int64 // number of events[0]
	events   []sseEvent
	bytes    int64 // of the events' frames, counted in budget unless released
	released bool  // no longer counted: the session moved on or was deleted
	done     bool
	changed  chan struct{} // nil while no reader waits

	endedAt *list.Element // in budget.ended; under budget.mu
}

// sseEvent is one event's whole SSE frame (id, event name, data).
type sseEvent struct {
	frame []byte
}

func newEventLog() *eventLog { return &eventLog{first: 1} }

func (l *eventLog) append(frame []byte) {
	l.mu.Lock()
	l.events = append(l.events, sseEvent{frame: frame})
	l.countLocked(int64(len(frame)))
	full := len(l.events) > maxTurnEvents
	tooBig := l.budget != nil && l.bytes > l.budget.lim.maxSession
	if full || tooBig {
		// Drop to three quarters of the bound, not just below it: the
		// copy dropping makes is then paid once per many events.
		keep, keepBytes := len(l.events), int64(-1)
		if full {
			keep = maxTurnEvents * 3 / 4
		}
		if tooBig {
			keepBytes = l.budget.lim.maxSession / 4 * 3
		}
		l.dropLocked(keep, keepBytes)
	}
	l.wake()
	over := l.budget != nil && !l.released && l.budget.used.Load() > l.budget.lim.maxTotal
	l.mu.Unlock()
	if over {
		l.budget.reclaim(l)
	}
}

// dropLocked drops the oldest events until at most keep remain and they
// hold at most keepBytes (keepBytes < 0: any), but never the newest; the
// events kept move to a new array.
func (l *eventLog) dropLocked(keep int, keepBytes int64) {
	i, bytes := 0, l.bytes
	for len(l.events)-i > 1 && (len(l.events)-i > keep || (keepBytes >= 0 && bytes > keepBytes)) {
		bytes -= int64(len(l.events[i].frame))
		i++
	}
	if i > 0 {
		l.countLocked(bytes - l.bytes)
		l.first += int64(i)
		l.events = slices.Clone(l.events[i:])
	}
}

// clearLocked drops every event.
func (l *eventLog) clearLocked() {
	l.countLocked(-l.bytes)
	l.first += int64(len(l.events))
	l.events = nil
}

// countLocked adds n to the log's bytes and, while it is counted, to the
// budget's.
func (l *eventLog) countLocked(n int64) {
	l.bytes += n
	if l.budget != nil && !l.released {
		l.budget.used.Add(n)
	}
}

func (l *eventLog) finish() {
	l.mu.Lock()
	l.done = true
	l.wake()
	if b := l.budget; b != nil && !l.released && len(l.events) > 0 {
		b.mu.Lock()
		l.endedAt = b.ended.PushBack(l)
		b.mu.Unlock()
	}
	l.mu.Unlock()
}

// release stops counting l in its budget (its session has a newer turn, or
// was deleted). Streams still reading it go on; the memory goes with them.
func (l *eventLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.budget
	if b == nil || l.released {
		return
	}
	b.used.Add(-l.bytes)
	l.released = true
	b.mu.Lock()
	if l.endedAt != nil {
		b.ended.Remove(l.endedAt)
		l.endedAt = nil
	}
	b.mu.Unlock()
}

// reclaim brings the budget back under its bound after self added an
// event: ended turns' logs give up all their events, the longest ended
// first; then self drops its own oldest (keeping its newest).
func (b *eventBudget) reclaim(self *eventLog) {
	for b.used.Load() > b.lim.maxTotal {
		b.mu.Lock()
		e := b.ended.Front()
		if e == nil {
			b.mu.Unlock()
			break
		}
		victim := e.Value.(*eventLog)
		b.ended.Remove(e)
		victim.endedAt = nil
		b.mu.Unlock()
		victim.mu.Lock()
		victim.clearLocked()
		victim.mu.Unlock()
	}
	self.mu.Lock()
	if over := b.used.Load() - b.lim.maxTotal; over > 0 && !self.released {
		self.dropLocked(len(self.events), max(self.bytes-over, 0))
	}
	self.mu.Unlock()
}

// wake closes the channel readers wait on, if one was handed out; l.mu is
// held.
func (l *eventLog) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// firstNumber is the number of the oldest event kept.
func (l *eventLog) firstNumber() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
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

// boundResult returns e, or, for a tool_result whose content is larger
// than max bytes, a copy whose content is one text: what the model was
// given for it (host.ContentsText), cut at max with a note.
func boundResult(e *host.Event, max int64) *host.Event {
	if e.Type != host.EventToolResult || max <= 0 || contentSize(e.Content) <= max {
		return e
	}
	c := *e
	c.Content = []mcp.Content{mcp.NewTextContent(host.CutResultText(host.ContentsText(e.Content, "\n"), max, "serve.events.maxResultBytes"))}
	return &c
}

// contentSize is the size of a result's content: its texts, or the JSON
// of other blocks (images, audio and resources weigh their data).
func contentSize(cs []mcp.Content) int64 {
	var n int64
	for _, c := range cs {
		switch v := c.(type) {
		case mcp.TextContent:
			n += int64(len(v.Text))
		case *mcp.TextContent:
			n += int64(len(v.Text))
		default:
			b, _ := json.Marshal(c)
			n += int64(len(b))
		}
	}
	return n
}
