package durableturn

import (
	"context"
	"sync"
)

// Attachment is a durable turn's link to the caller that waits for it in
// this process: T is the turn its events go to, and Ctx ending interrupts
// the turn.
type Attachment[T any] struct {
	Turn T
	Ctx  context.Context

	// taken: a run of the turn took the attachment (Attachments.Wait;
	// under the attachments' mutex); ran is closed when that run has
	// returned.
	taken   bool
	ran     chan struct{}
	ranOnce sync.Once
}

// NewAttachment returns the attachment of turn t to its caller's ctx.
func NewAttachment[T any](t T, ctx context.Context) *Attachment[T] {
	return &Attachment[T]{Turn: t, Ctx: ctx, ran: make(chan struct{})}
}

// RunEnded closes Ran, once.
func (att *Attachment[T]) RunEnded() { att.ranOnce.Do(func() { close(att.ran) }) }

// Ran is closed once the run that took the attachment has returned.
func (att *Attachment[T]) Ran() <-chan struct{} { return att.ran }

// Attachments are the durable turns of this process that have a caller,
// by turn id, and the recovered turns waiting for one.
type Attachments[T any] struct {
	mu      sync.Mutex
	byID    map[string]*Attachment[T]
	waiting map[string]chan struct{}
	// onUnattached is told of each turn the engine runs here with no
	// caller (Host.OnUnattachedTurn); unhanded are those it ran before
	// one was set.
	onUnattached func(turnID string, rec TurnRecord)
	unhanded     map[string]TurnRecord
}

// MaxUnhanded bounds the taken-up turns kept for a handler not set yet
// (past it they wait for Session.Resume alone).
const MaxUnhanded = 10_000

// Unattached tells the handler of a turn the engine runs here with no
// caller, or keeps it for the handler set later.
func (a *Attachments[T]) Unattached(id string, rec TurnRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byID[id]; ok {
		return
	}
	if a.onUnattached == nil {
		if a.unhanded == nil {
			a.unhanded = map[string]TurnRecord{}
		}
		if len(a.unhanded) < MaxUnhanded {
			a.unhanded[id] = rec
		}
		return
	}
	go a.onUnattached(id, rec)
}

// SetHandler sets fn, called in a goroutine of its own for every turn
// the engine runs here with no caller; the turns it ran before are
// handed to fn at once.
func (a *Attachments[T]) SetHandler(fn func(turnID string, rec TurnRecord)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onUnattached = fn
	for id, rec := range a.unhanded {
		if _, ok := a.byID[id]; !ok && fn != nil {
			go fn(id, rec)
		}
	}
	a.unhanded = nil
}

// Attach makes att the caller of turn id, and wakes a run waiting for one.
func (a *Attachments[T]) Attach(id string, att *Attachment[T]) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID, a.waiting = map[string]*Attachment[T]{}, map[string]chan struct{}{}
	}
	a.byID[id] = att
	delete(a.unhanded, id)
	if ch, ok := a.waiting[id]; ok {
		close(ch)
		delete(a.waiting, id)
	}
}

// Detach drops the caller of turn id.
func (a *Attachments[T]) Detach(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byID, id)
}

// Release detaches att (when it is still id's) and reports whether a run
// took it: its caller must then wait for att.Ran before it lets the turn
// go, since the run may still be using it (an engine that stopped answers
// AwaitTurn before the turn's run has returned).
func (a *Attachments[T]) Release(id string, att *Attachment[T]) (taken bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID[id] == att {
		delete(a.byID, id)
	}
	return att.taken
}

// Wait returns the turn's attachment, waiting for one while there is none
// (a turn the engine recovered before its session was resumed here).
func (a *Attachments[T]) Wait(ctx context.Context, id string) (*Attachment[T], error) {
	for {
		a.mu.Lock()
		if att, ok := a.byID[id]; ok {
			att.taken = true
			a.mu.Unlock()
			return att, nil
		}
		if a.waiting == nil {
			a.byID, a.waiting = map[string]*Attachment[T]{}, map[string]chan struct{}{}
		}
		ch, ok := a.waiting[id]
		if !ok {
			ch = make(chan struct{})
			a.waiting[id] = ch
		}
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
