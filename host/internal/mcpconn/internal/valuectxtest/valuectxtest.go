// Package valuectxtest checks a context that carries a value of its own
// against the context.WithValue it stands for.
package valuectxtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

type otherKey struct{}

// SameAsWithValue checks that bind(parent), for parents without a
// deadline or cancellation, cancellable, and with a deadline, is the
// context context.WithValue(parent, key, value) would be: the same values
// (key's, a parent's, a missing one), deadline, Done channel, error and
// cause once the parent is cancelled, and children that end with it. bind
// returns the context and the value it carries under key.
func SameAsWithValue(t *testing.T, key any, bind func(parent context.Context) (ctx context.Context, value any)) {
	t.Helper()
	parents := []struct {
		name   string
		parent func() (context.Context, context.CancelCauseFunc)
	}{
		{"background", func() (context.Context, context.CancelCauseFunc) {
			return context.WithValue(context.Background(), otherKey{}, "v"), func(error) {}
		}},
		{"cancellable", func() (context.Context, context.CancelCauseFunc) {
			return context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "v"))
		}},
		{"deadline", func() (context.Context, context.CancelCauseFunc) {
			ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "v"))
			ctx, stop := context.WithDeadline(ctx, time.Now().Add(time.Hour))
			return ctx, func(err error) { cancel(err); stop() }
		}},
	}
	for _, p := range parents {
		t.Run(p.name, func(t *testing.T) {
			parent, cancel := p.parent()
			got, value := bind(parent)
			want := context.WithValue(parent, key, value)
			for _, k := range []any{key, otherKey{}, "missing"} {
				if g, w := got.Value(k), want.Value(k); g != w {
					t.Errorf("Value(%T) = %v, want %v", k, g, w)
				}
			}
			gd, gok := got.Deadline()
			wd, wok := want.Deadline()
			if !gd.Equal(wd) || gok != wok || got.Done() != want.Done() {
				t.Errorf("Deadline %v %v, Done %v; want %v %v, %v", gd, gok, got.Done(), wd, wok, want.Done())
			}
			child, stop := context.WithCancel(got)
			defer stop()
			cause := errors.New("gone")
			cancel(cause)
			if !errors.Is(got.Err(), want.Err()) || context.Cause(got) != context.Cause(want) {
				t.Errorf("after cancel: Err %v, Cause %v; want %v, %v", got.Err(), context.Cause(got), want.Err(), context.Cause(want))
			}
			if (child.Err() != nil) != (want.Err() != nil) || (want.Err() != nil && context.Cause(child) != cause) {
				t.Errorf("a child: Err %v, Cause %v", child.Err(), context.Cause(child))
			}
		})
	}
}
