package approvals

import (
	"encoding/json"
	"sync"
)

// DefaultDenialMemory is how many denied calls a session remembers when
// NewDenialMemory gets 0.
const DefaultDenialMemory = 1024

// Denial is a remembered refusal.
type Denial struct {
	Outcome Outcome
	Reason  ReasonClass
	Note    string
}

// DenialMemory remembers which identical calls (server, tool, definition
// hash, canonical arguments) approvers refused in one session, so a model
// that retries the same call gets the same answer without anyone being
// asked again. It forgets the oldest entries beyond its size. Safe for
// concurrent use.
type DenialMemory struct {
	mu    sync.Mutex
	max   int
	m     map[denialKey]Denial
	order []denialKey
}

type denialKey struct{ server, tool, defHash, args string }

// NewDenialMemory returns a memory of at most size entries.
func NewDenialMemory(size int) *DenialMemory {
	if size <= 0 {
		size = DefaultDenialMemory
	}
	return &DenialMemory{max: size, m: map[denialKey]Denial{}}
}

func keyFor(server, tool, defHash string, args json.RawMessage) denialKey {
	return denialKey{server, tool, defHash, CanonicalHash(args)}
}

// Remember records a refusal.
func (d *DenialMemory) Remember(server, tool, defHash string, args json.RawMessage, denial Denial) {
	k := keyFor(server, tool, defHash, args)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[k]; !ok {
		d.order = append(d.order, k)
	}
	d.m[k] = denial
	for len(d.order) > d.max {
		delete(d.m, d.order[0])
		d.order = d.order[1:]
	}
}

// Lookup returns the refusal of an identical earlier call.
func (d *DenialMemory) Lookup(server, tool, defHash string, args json.RawMessage) (Denial, bool) {
	k := keyFor(server, tool, defHash, args)
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[k]
	return v, ok
}
