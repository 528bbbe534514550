package rules

import "sync"

// memo is a bounded, concurrency-safe memo: the one owner of the Policy's
// memos (evaluations, effective metadata). Once it holds max entries,
// further values are computed on every call and not kept.
type memo[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func newMemo[K comparable, V any](max int) *memo[K, V] {
	return &memo[K, V]{m: map[K]V{}, max: max}
}

// get returns the memoised value of key, computing (and keeping, while
// there is room) it if there is none. compute runs without the lock: two
// callers may both compute a missing value; either result is kept. A nil
// memo keeps nothing.
func (c *memo[K, V]) get(key K, compute func() V) V {
	if c == nil {
		return compute()
	}
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = compute()
	c.mu.Lock()
	if len(c.m) < c.max {
		c.m[key] = v
	}
	c.mu.Unlock()
	return v
}

// len is how many values the memo holds.
func (c *memo[K, V]) len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
