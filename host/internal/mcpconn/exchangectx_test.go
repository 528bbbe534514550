package mcpconn

import (
	"context"
	"testing"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/valuectxtest"
)

var sinkCtx context.Context // keeps a bound context on the heap

// An exchange bound to ctx is the context context.WithValue(ctx,
// exchangeKey{}, x) would be, found by exchangeFor for its method alone;
// binding allocates nothing.
func TestExchangeIsItsRequestsContext(t *testing.T) {
	valuectxtest.SameAsWithValue(t, exchangeKey{}, func(parent context.Context) (context.Context, any) {
		x := &exchange{method: "tools/call"}
		ctx := x.bind(parent)
		if exchangeFor(ctx, "tools/call") != x || exchangeFor(ctx, "tools/list") != nil {
			t.Error("exchangeFor does not find the exchange for its method alone")
		}
		return ctx, x
	})
	x := &exchange{method: "tools/call"}
	if n := testing.AllocsPerRun(100, func() { sinkCtx = x.bind(context.Background()) }); n != 0 {
		t.Errorf("bind allocates %v times", n)
	}
}
