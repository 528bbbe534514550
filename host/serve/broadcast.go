package serve

import (
	"errors"
	"sync"
)

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
