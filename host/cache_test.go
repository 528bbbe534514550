package host

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/secureargs"
	"github.com/agenthost/agenthost/host/mcptest"
)

// TestDefinitionChurnKeepsTheHostBounded: a server that changes its tool
// definitions 10,000 times does not grow the host. Every definition is
// listed, shown in a session's view (its risk and whether the session can
// ever call it are computed) and called once with a secure value (the
// session prepares the call); what the host keeps about a definition must
// die with it. The heap after GC is measured at 1,000 and
// at 10,000 changes; a cache keyed by definition that is never evicted
// grows it by the 9,000 definitions in between (tens of MB here).
func TestDefinitionChurnKeepsTheHostBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 re-listings")
	}
	padding := strings.Repeat("Reads one order of the current tenant. ", 60) // ~2.4 KB per definition
	tools := func(i int) []byte {
		return fmt.Appendf(nil, `[{"name": "get_order", "description": %q,
		  "inputSchema": {"type": "object", "properties": {"id": {"type": "string", "description": "order %d"}}},
		  "secureInputSchema": {"type": "object", "properties": {"tenant": {"type": "string"}}, "required": ["tenant"]}}]`,
			fmt.Sprintf("%s (revision %d)", padding, i), i)
	}
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: tools(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {}},
		Bindings:   []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{"tenant": {Value: "acme"}}}},
		Approvals:  readsAllowed(),
	}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) { return srv.InProcessTransport(), nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx := context.Background()
	h.Connect(ctx)
	s := h.NewSession(SessionOptions{})

	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var at1000 uint64
	for i := 1; i <= 10000; i++ {
		if err := srv.SetTools(tools(i)); err != nil {
			t.Fatal(err)
		}
		if err := h.Refresh(ctx, "db"); err != nil {
			t.Fatal(err)
		}
		v := s.View(ctx)
		if tv := v.Tools["db"]; len(tv) != 1 || tv[0].Status != ToolActive || !strings.Contains(tv[0].Tool.Description, fmt.Sprintf("(revision %d)", i)) {
			t.Fatalf("change %d: the view does not show the new definition: %+v", i, tv)
		}
		if _, err := s.CallTool(ctx, "db", "get_order", json.RawMessage(`{"id":"1"}`)); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		if i%100 == 0 {
			srv.Recording().Reset() // the test server's memory, not the host's
		}
		if i == 1000 {
			at1000 = heap()
		}
	}
	at10000 := heap()
	if prepared := s.secure.Len(); prepared > secureargs.MaxPrepared {
		t.Errorf("the session keeps %d prepared calls, want at most %d", prepared, secureargs.MaxPrepared)
	}
	const bound = 8 << 20
	if at10000 > at1000 && at10000-at1000 > bound {
		t.Errorf("the heap grew by %.1f MB from 1,000 to 10,000 definition changes (%.1f -> %.1f MB), want under %d MB: something keeps every definition",
			float64(at10000-at1000)/(1<<20), float64(at1000)/(1<<20), float64(at10000)/(1<<20), bound>>20)
	}
	t.Logf("heap after GC: %.1f MB at 1,000 changes, %.1f MB at 10,000", float64(at1000)/(1<<20), float64(at10000)/(1<<20))
}
