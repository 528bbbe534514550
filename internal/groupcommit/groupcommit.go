// Package groupcommit batches writes that must each be durable before
// their writer goes on: concurrent writers share one commit (one database
// transaction), and each Write returns only once the batch holding its
// item was committed (or failed).
package groupcommit

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("group committer closed")

// CommitFunc commits one batch, all or nothing.
type CommitFunc[T any] func(ctx context.Context, batch []T) error

// Committer runs one goroutine that commits batches; Close stops it.
type Committer[T any] struct {
	commit   CommitFunc[T]
	max      int
	items    chan item[T]
	mu       sync.RWMutex
	closed   bool
	stop     chan struct{}
	finished chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
}

type item[T any] struct {
	v    T
	done chan error
}

// New starts a committer writing batches of at most maxBatch items.
func New[T any](commit CommitFunc[T], maxBatch int) *Committer[T] {
	if maxBatch < 1 {
		maxBatch = 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Committer[T]{commit: commit, max: maxBatch, items: make(chan item[T], maxBatch),
		stop: make(chan struct{}), finished: make(chan struct{}), ctx: ctx, cancel: cancel}
	go c.loop()
	return c
}

var donePool = sync.Pool{New: func() any { return make(chan error, 1) }}

// Write hands v to the next batch and waits until that batch is committed.
// ctx is not consulted once v is queued: a decision that was made is
// recorded even if the caller has given up.
func (c *Committer[T]) Write(ctx context.Context, v T) error {
	done := donePool.Get().(chan error)
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		donePool.Put(done)
		return ErrClosed
	}
	select {
	case c.items <- item[T]{v: v, done: done}:
	case <-ctx.Done():
		c.mu.RUnlock()
		donePool.Put(done)
		return ctx.Err()
	}
	c.mu.RUnlock()
	err := <-done
	donePool.Put(done)
	return err
}

func (c *Committer[T]) loop() {
	defer close(c.finished)
	batch := make([]item[T], 0, c.max)
	vals := make([]T, 0, c.max)
	for {
		var first item[T]
		select {
		case first = <-c.items:
		case <-c.stop:
			// Close holds the lock: nobody queues any more; drain what
			// is queued.
			for {
				select {
				case it := <-c.items:
					c.flush(append(batch[:0], it), vals)
				default:
					return
				}
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < c.max {
			select {
			case it := <-c.items:
				batch = append(batch, it)
			default:
				break fill
			}
		}
		c.flush(batch, vals)
	}
}

func (c *Committer[T]) flush(batch []item[T], vals []T) {
	vals = vals[:0]
	for _, it := range batch {
		vals = append(vals, it.v)
	}
	err := c.commit(c.ctx, vals)
	for _, it := range batch {
		it.done <- err
	}
	var zero T
	for i := range vals {
		vals[i] = zero
	}
}

// Close commits what is queued, stops the goroutine and makes later
// writes fail with ErrClosed.
func (c *Committer[T]) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.mu.Unlock()
	close(c.stop)
	<-c.finished
	c.cancel()
	return nil
}
