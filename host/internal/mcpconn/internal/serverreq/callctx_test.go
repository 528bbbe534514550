package serverreq

import (
	"context"
	"log/slog"
	"testing"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/valuectxtest"
)

var sinkCtx context.Context // keeps WithCall's context on the heap

// WithCall's context is the one context.WithValue(ctx, callKey{}, call)
// would be; it allocates only the Call.
func TestWithCallIsAValueContext(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler))
	valuectxtest.SameAsWithValue(t, callKey{}, func(parent context.Context) (context.Context, any) {
		return s.WithCall(parent)
	})
	if n := testing.AllocsPerRun(100, func() { sinkCtx, _ = s.WithCall(context.Background()) }); n != 1 {
		t.Errorf("WithCall allocates %v times, want 1 (the Call)", n)
	}
}
