// Package eventlog owns what serve keeps of a served turn's events: each
// event encoded once (its JSON byte for byte as encoding/json writes it,
// framed as a Server-Sent Event, cut from shared chunks), numbered from 1,
// bounded per tool result, per turn and across every session of a server
// (serve.events), and handed to the streams that read them, which wait on
// the next change.
package eventlog

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
//   - one tool_result event: its content is at most MaxResult bytes; a
//     larger one is replaced by the text the model was given for it (images,
//     audio and blobs summarised), cut there with a note (BoundResult);
//   - one session: only its latest turn is kept, with at most MaxTurnEvents
//     events and MaxSession bytes of them; past either the oldest are
//     dropped (the newest is always kept);
//   - every session: at most MaxTotal bytes in all (Budget). Past it,
//     turns that have ended lose all their events, the longest ended first;
//     when no ended turn has any left, the turn adding an event drops its
//     own oldest. A running turn never loses events to another session.
//
// A client that asks for dropped events (a reconnect with an older
// Last-Event-ID) gets 410 Gone, or an error event when its stream falls
// behind the drops.

// MaxTurnEvents bounds the events a turn keeps.
const MaxTurnEvents = 10_000

// Limits bound what the event logs keep (serve.events).
type Limits struct {
	MaxResult  int64 // the content of one tool_result
	MaxSession int64 // one log: a session keeps only its latest turn's
	MaxTotal   int64 // every log of the server
}

// Budget is the bytes every event log of a server keeps, together.
type Budget struct {
	lim  Limits
	used atomic.Int64 // changed under the lock of the log whose events change

	mu    sync.Mutex
	ended list.List // *Log of ended turns that hold events, longest ended first
}

// NewBudget returns an empty budget of lim.
func NewBudget(lim Limits) *Budget { return &Budget{lim: lim} }

// NewLog returns an empty log counted in b.
func (b *Budget) NewLog() *Log { return b.NewLogFrom(1) }

// NewLogFrom returns an empty log counted in b whose first event is
// number first (a turn taken up again goes on from its stored events).
func (b *Budget) NewLogFrom(first int64) *Log { return &Log{budget: b, first: first} }

// Log is one turn's events, encoded once, numbered from 1. Readers
// wait on a channel that the next change closes. It is made only when a
// reader asks for it: a turn whose events come faster than its stream
// takes them makes and closes none.
//
// A slice of events handed to a reader is never written again: dropping
// events copies the ones kept into a new array.
type Log struct {
	budget *Budget // nil: bounded by MaxTurnEvents only

	mu       sync.Mutex
	first    int64    // number of events[0]
	events   [][]byte // each event's whole SSE frame
	bytes    int64    // of the events' frames, counted in budget unless released
	released bool     // no longer counted: the session moved on or was deleted
	done     bool
	changed  chan struct{} // nil while no reader waits

	endedAt *list.Element // in budget.ended; under budget.mu
}

// New returns an empty log bounded by MaxTurnEvents only.
func New() *Log { return &Log{first: 1} }

// Append adds an event's whole SSE frame (id, event name, data), dropping
// the oldest past the bounds, and wakes the readers that wait.
func (l *Log) Append(frame []byte) {
	l.mu.Lock()
	l.events = append(l.events, frame)
	l.countLocked(int64(len(frame)))
	full := len(l.events) > MaxTurnEvents
	tooBig := l.budget != nil && l.bytes > l.budget.lim.MaxSession
	if full || tooBig {
		// Drop to three quarters of the bound, not just below it: the
		// copy dropping makes is then paid once per many events.
		keep, keepBytes := len(l.events), int64(-1)
		if full {
			keep = MaxTurnEvents * 3 / 4
		}
		if tooBig {
			keepBytes = l.budget.lim.MaxSession / 4 * 3
		}
		l.dropLocked(keep, keepBytes)
	}
	l.wake()
	over := l.budget != nil && !l.released && l.budget.used.Load() > l.budget.lim.MaxTotal
	l.mu.Unlock()
	if over {
		l.budget.reclaim(l)
	}
}

// dropLocked drops the oldest events until at most keep remain and they
// hold at most keepBytes (keepBytes < 0: any), but never the newest; the
// events kept move to a new array.
func (l *Log) dropLocked(keep int, keepBytes int64) {
	i, bytes := 0, l.bytes
	for len(l.events)-i > 1 && (len(l.events)-i > keep || (keepBytes >= 0 && bytes > keepBytes)) {
		bytes -= int64(len(l.events[i]))
		i++
	}
	if i > 0 {
		l.countLocked(bytes - l.bytes)
		l.first += int64(i)
		l.events = slices.Clone(l.events[i:])
	}
}

// clearLocked drops every event.
func (l *Log) clearLocked() {
	l.countLocked(-l.bytes)
	l.first += int64(len(l.events))
	l.events = nil
}

// countLocked adds n to the log's bytes and, while it is counted, to the
// budget's.
func (l *Log) countLocked(n int64) {
	l.bytes += n
	if l.budget != nil && !l.released {
		l.budget.used.Add(n)
	}
}

// Finish marks the turn ended and wakes the readers; a budgeted log then
// waits, longest ended first, to give its events up past the total.
func (l *Log) Finish() {
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

// Release stops counting l in its budget (its session has a newer turn, or
// was deleted). Streams still reading it go on; the memory goes with them.
func (l *Log) Release() {
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
func (b *Budget) reclaim(self *Log) {
	for b.used.Load() > b.lim.MaxTotal {
		b.mu.Lock()
		e := b.ended.Front()
		if e == nil {
			b.mu.Unlock()
			break
		}
		victim := e.Value.(*Log)
		b.ended.Remove(e)
		victim.endedAt = nil
		b.mu.Unlock()
		victim.mu.Lock()
		victim.clearLocked()
		victim.mu.Unlock()
	}
	self.mu.Lock()
	if over := b.used.Load() - b.lim.MaxTotal; over > 0 && !self.released {
		self.dropLocked(len(self.events), max(self.bytes-over, 0))
	}
	self.mu.Unlock()
}

// wake closes the channel readers wait on, if one was handed out; l.mu is
// held.
func (l *Log) wake() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// FirstNumber is the number of the oldest event kept.
func (l *Log) FirstNumber() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// Waiting reports whether a reader holds the channel of the next change
// (tests use it to know that a stream has caught up).
func (l *Log) Waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed != nil
}

// Since returns the events numbered after `after`, the number of the
// first of them, whether the turn has ended, and a channel closed at the
// next change. gone reports that events after `after` were dropped.
func (l *Log) Since(after int64) (evs [][]byte, first int64, done bool, changed <-chan struct{}, gone bool) {
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

// BoundResult returns e, or, for a tool_result whose content is larger
// than max bytes, a copy whose content is one text: what the model was
// given for it (host.ContentsText), cut at max with a note.
func BoundResult(e *host.Event, max int64) *host.Event {
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
