package mcpconn

import (
	"context"
	"errors"
	"testing"
	"time"
)

type otherKey struct{}

var sinkCtx context.Context // keeps a bound context on the heap

// An exchange bound to ctx is the context context.WithValue(ctx,
// exchangeKey{}, x) would be: the same values, deadline, cancellation and
// cause, and children that end with it; binding allocates nothing.
func TestExchangeIsItsRequestsContext(t *testing.T) {
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, cancel := tt.parent()
			x := &exchange{method: "tools/call"}
			want := context.WithValue(parent, exchangeKey{}, x)
			got := x.bind(parent)
			for _, key := range []any{exchangeKey{}, otherKey{}, "missing"} {
				if g, w := got.Value(key), want.Value(key); g != w {
					t.Errorf("Value(%T) = %v, want %v", key, g, w)
				}
			}
			if exchangeFor(got, "tools/call") != x || exchangeFor(got, "tools/list") != nil {
				t.Error("exchangeFor does not find the exchange for its method alone")
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
				t.Errorf("a child of the exchange: Err %v, Cause %v", child.Err(), context.Cause(child))
			}
		})
	}
	x := &exchange{method: "tools/call"}
	if n := testing.AllocsPerRun(100, func() { sinkCtx = x.bind(context.Background()) }); n != 0 {
		t.Errorf("bind allocates %v times", n)
	}
}
