package serverreq

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

type otherKey struct{}

var sinkCtx context.Context // keeps WithCall's context on the heap

// WithCall's context is the one context.WithValue(ctx, callKey{}, call)
// would be: the same values, deadline, cancellation and cause, and
// children that end with it; it allocates only the Call.
func TestWithCallIsAValueContext(t *testing.T) {
	tests := []struct {
		name   string
		parent func() (context.Context, context.CancelCauseFunc)
	}{
		{"background", func() (context.Context, context.CancelCauseFunc) {
			return context.WithValue(context.Background(), otherKey{}, "v"), func(error) {}
		}},
		{"cancellable", func() (context.Context, context.CancelCauseFunc) {
			ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "v"))
			return ctx, cancel
		}},
		{"deadline", func() (context.Context, context.CancelCauseFunc) {
			ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "v"))
			ctx, stop := context.WithDeadline(ctx, time.Now().Add(time.Hour))
			return ctx, func(err error) { cancel(err); stop() }
		}},
	}
	s := New(slog.New(slog.DiscardHandler))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancel := tt.parent()
			got, call := s.WithCall(parent)
			want := context.WithValue(parent, callKey{}, call)
			for _, key := range []any{callKey{}, otherKey{}, "missing"} {
				if g, w := got.Value(key), want.Value(key); g != w {
					t.Errorf("Value(%T) = %v, want %v", key, g, w)
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
				t.Errorf("a child of the call's context: Err %v, Cause %v", child.Err(), context.Cause(child))
			}
		})
	}
	if n := testing.AllocsPerRun(100, func() { sinkCtx, _ = s.WithCall(context.Background()) }); n != 1 {
		t.Errorf("WithCall allocates %v times, want 1 (the Call)", n)
	}
}
