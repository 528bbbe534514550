package approvals

import (
	"encoding/json"
	"sync"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/rules"
)

// defaultDenialMemory is how many denied calls a session remembers when
// NewDenialMemory gets 0.
const defaultDenialMemory = 1024

// deniedCall is a remembered refusal.
type deniedCall struct {
	Outcome rules.Outcome
	Reason  rules.ReasonClass
	Note    string
}

// denialMemory remembers which identical calls (server, tool, definition
// hash, canonical arguments) approvers refused in one session, so a model
// that retries the same call gets the same answer without anyone being
// asked again. It forgets the oldest entries beyond its size. Safe for
// concurrent use.
type denialMemory struct {
	mu    sync.Mutex
	max   int
	m     map[denialKey]deniedCall
	order []denialKey
}

type denialKey struct{ server, tool, defHash, args string }

// newDenialMemory returns a memory of at most size entries.
func newDenialMemory(size int) *denialMemory {
	if size <= 0 {
		size = defaultDenialMemory
	}
	return &denialMemory{max: size, m: map[denialKey]deniedCall{}}
}

func keyFor(server, tool, defHash string, args json.RawMessage) denialKey {
	return denialKey{server, tool, defHash, norm.CanonicalHash(args)}
}

// Remember records a refusal of the call k names.
func (d *denialMemory) Remember(k denialKey, denial deniedCall) {
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

// Lookup returns the refusal of an identical earlier call (k: keyFor the
// call, made once for its Lookup and its Remember: the arguments' canonical
// hash decodes and encodes them).
func (d *denialMemory) Lookup(k denialKey) (deniedCall, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[k]
	return v, ok
}
