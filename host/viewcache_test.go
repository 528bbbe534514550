package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/host/internal/verdicts"
	"github.com/agenthost/agenthost/host/internal/views"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// TestRefreshRebuildsOnlyThatServersView: after one server is re-listed,
// the session's next view re-evaluates that server only, renames nothing
// when its tool names did not change (a definition-only change), and
// composes the model view from the other servers' very same parts; a
// re-listing that renames a tool renames that server only.
func TestRefreshRebuildsOnlyThatServersView(t *testing.T) {
	servers := []string{"a", "b", "c"}
	cfg := &config.Config{MCPServers: map[string]*config.Server{}, Approvals: readsAllowed()}
	for _, name := range servers {
		cfg.MCPServers[name] = &config.Server{Type: config.TransportHTTP, URL: "http://127.0.0.1:9/" + name}
	}
	cfg.Approvals.Catalogue[0].Server = "*"
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	page := func(description string, tools ...string) json.RawMessage {
		var defs []json.RawMessage
		for _, tool := range tools {
			defs = append(defs, fmt.Appendf(nil, `{"name":%q,"description":%q,"inputSchema":{"type":"object","properties":{"id":{"type":"string"}}}}`, tool, description))
		}
		out, _ := json.Marshal(map[string]any{"tools": defs})
		return out
	}
	load := func(server, description string, tools ...string) {
		t.Helper()
		if err := h.loadListing(server, false, page(description, tools...)); err != nil {
			t.Fatal(err)
		}
	}
	h.redactor.Add("a-protected-value") // so that every listing is checked for it
	for _, name := range servers {
		load(name, "first", "get", "put")
	}
	taintChecks := func(server string) []*verdicts.TaintAnswer {
		var out []*verdicts.TaintAnswer
		for _, ct := range h.Server(server).Tools {
			out = append(out, verdicts.Taint(ct))
		}
		return out
	}
	ctx := context.Background()
	s := h.NewSession(SessionOptions{})
	t.Cleanup(s.Close)
	v1 := s.View(ctx)
	if got := v1.Model.Len(); got != 6 {
		t.Fatalf("model view has %d tools, want 6", got)
	}
	state := func() (map[string]uint64, map[string]*views.ServerView) {
		return h.views.NameGens(), s.views.Servers()
	}
	gens1, views1 := state()

	load("b", "second", "put", "get") // same names, in another order
	v2 := s.View(ctx)
	gens2, views2 := state()
	for _, name := range servers {
		if gens2[name] != gens1[name] {
			t.Errorf("%s: renamed (name generation %d -> %d) although no tool name changed", name, gens1[name], gens2[name])
		}
		if reused := views2[name] == views1[name]; reused != (name != "b") {
			t.Errorf("%s: per-server view reused = %t", name, reused)
		}
	}
	for i, part := range v2.Model.Parts() {
		if want := views2[servers[i]].Part(); part != want {
			t.Errorf("part %d of the model view is not %s's cached part", i, servers[i])
		}
	}
	if d := v2.Tools["b"][0].Tool.Description; d != "second" {
		t.Errorf("b's view shows description %q, want the new one", d)
	}
	names := func(v *SessionView) []string {
		var out []string
		for _, f := range v.Model.Tools() {
			out = append(out, f.Name)
		}
		return out
	}
	want := []string{"a__get", "a__put", "b__get", "b__put", "c__get", "c__put"}
	if got := names(v2); !slices.Equal(got, want) {
		t.Errorf("model tools %v, want %v", got, want)
	}

	// Byte-identical definitions: the session keeps its verdicts and b's
	// model view part, over the new catalog entries.
	checks := taintChecks("b")
	load("b", "second", "put", "get")
	v2b := s.View(ctx)
	if again := taintChecks("b"); !slices.Equal(again, checks) || slices.Contains(again, nil) {
		t.Error("the taint check ran again for unchanged definitions")
	}
	_, views2b := state()
	if views2b["b"] == views2["b"] || views2b["b"].Part() != views2["b"].Part() {
		t.Error("b re-listed unchanged: want a new per-server view sharing the model part")
	}
	for i, tv := range v2b.Tools["b"] {
		if tv.CatalogTool == v2.Tools["b"][i].CatalogTool || tv.CatalogTool != h.Server("b").Tools[i] {
			t.Errorf("b/%s: the view does not hand out the new catalog entry", tv.Tool.Name)
		}
		if tv.Status != ToolActive || tv.ExposedName != v2.Tools["b"][i].ExposedName {
			t.Errorf("b/%s: %s %q", tv.Tool.Name, tv.Status, tv.ExposedName)
		}
	}
	// The same definitions again, but now holding a protected value: the
	// earlier verdicts must not be reused.
	h.redactor.Add("second")
	load("b", "second", "put", "get")
	tainted := s.View(ctx)
	for _, tv := range tainted.Tools["b"] {
		if tv.Status != ToolExcluded || tv.Reason != taint.Reason {
			t.Errorf("b/%s: %s (%s), want excluded as tainted", tv.Tool.Name, tv.Status, tv.Reason)
		}
	}
	if got := tainted.Model.Len(); got != 4 {
		t.Errorf("model view has %d tools after b's were tainted, want 4", got)
	}
	load("b", "another", "put", "get")
	s.View(ctx)
	gens2, views2 = state()

	load("c", "third", "get", "delete")
	v3 := s.View(ctx)
	gens3, views3 := state()
	for _, name := range servers {
		if renamed := gens3[name] != gens2[name]; renamed != (name == "c") {
			t.Errorf("%s: renamed = %t after c replaced a tool", name, renamed)
		}
		if reused := views3[name] == views2[name]; reused != (name != "c") {
			t.Errorf("%s: per-server view reused = %t", name, reused)
		}
	}
	want = []string{"a__get", "a__put", "b__get", "b__put", "c__delete", "c__get"}
	if got := names(v3); !slices.Equal(got, want) {
		t.Errorf("model tools %v, want %v", got, want)
	}
}

// TestLoadListingCopiesThePages: parsed definitions share their bytes, so
// a caller reusing its page buffer after LoadListing must not change the
// catalog's names, descriptions or schemas.
func TestLoadListingCopiesThePages(t *testing.T) {
	cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {URL: "http://127.0.0.1:1/mcp"}}}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	page := []byte(`{"tools":[{"name":"get_rows","description":"reads rows","inputSchema":{"type":"object","properties":{"table":{"type":"string"}}}}]}`)
	if err := h.loadListing("db", false, page); err != nil {
		t.Fatal(err)
	}
	for i := range page { // the caller reuses its buffer
		if page[i] >= 'a' && page[i] <= 'z' {
			page[i] = 'x'
		}
	}
	ct := h.Server("db").Tool("get_rows")
	if ct == nil {
		t.Fatal("get_rows is gone after the caller reused its buffer")
	}
	if ct.Tool.Name != "get_rows" || ct.Tool.Description != "reads rows" || !strings.Contains(string(ct.Tool.InputSchema), `"table"`) {
		t.Errorf("the definition changed with the caller's buffer: %q %q %s", ct.Tool.Name, ct.Tool.Description, ct.Tool.InputSchema)
	}
}

// reusingTransport hands every response's result over in one buffer that
// the next response overwrites, as a transport given to Options.Transports
// may.
type reusingTransport struct {
	transport.Interface
	mu  sync.Mutex
	buf []byte
}

func (r *reusingTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := r.Interface.SendRequest(ctx, req)
	if err != nil || resp == nil || resp.Result == nil {
		return resp, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.buf {
		r.buf[i] = ' ' // what the previous response left is gone
	}
	r.buf = append(r.buf[:0], resp.Result...)
	out := *resp
	out.Result = r.buf
	return &out, nil
}

// TestHandedInTransportMayReuseItsBuffer: the host keeps a listing's bytes
// (its parsed definitions share them), so over a transport that reuses its
// result buffer the catalog must survive the next response.
func TestHandedInTransportMayReuseItsBuffer(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name":"get_rows","description":"reads rows","inputSchema":{"type":"object","properties":{"table":{"type":"string"}}}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {}}, Approvals: readsAllowed()}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) {
			return &reusingTransport{Interface: srv.InProcessTransport()}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ctx := context.Background()
	h.Connect(ctx)
	s := h.NewSession(SessionOptions{})
	t.Cleanup(s.Close)
	if _, err := s.CallTool(ctx, "db", "get_rows", json.RawMessage(`{"table":"t"}`)); err != nil {
		t.Fatal(err) // its answer overwrote the transport's buffer
	}
	ct := h.Server("db").Tool("get_rows")
	if ct == nil || ct.Tool.Name != "get_rows" || ct.Tool.Description != "reads rows" || !strings.Contains(string(ct.Tool.InputSchema), `"table"`) {
		t.Fatalf("the catalog changed with the transport's buffer: %+v", ct)
	}
}

// TestSessionStartCountsEachServersTools: session_start names every
// function offered and, per server, how many are its own (counted in one
// walk over the composed view, not a lookup through every part per
// function).
func TestSessionStartCountsEachServersTools(t *testing.T) {
	transports := map[string]TransportFactory{}
	for name, tools := range map[string]string{
		"a": `[{"name":"get","inputSchema":{"type":"object"}},{"name":"put","inputSchema":{"type":"object"}}]`,
		"b": `[{"name":"list","inputSchema":{"type":"object"}}]`,
	} {
		srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(tools)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		transports[name] = func() (transport.Interface, error) { return srv.InProcessTransport(), nil }
	}
	cfg := &config.Config{MCPServers: map[string]*config.Server{"a": {}, "b": {}}, Approvals: readsAllowed()}
	cfg.ApplyDefaults()
	llm := model.Func(func(context.Context, *model.Request) (model.Message, model.Usage, error) {
		return model.Message{Content: "done"}, model.Usage{}, nil
	})
	h, err := New(Options{Config: cfg, Model: llm, ModelName: "m", Transports: transports})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := h.NewSession(SessionOptions{})
	t.Cleanup(s.Close)
	for e := range s.Turn(context.Background(), "hi", TurnOptions{}) {
		if e.Type != EventSessionStart {
			continue
		}
		if got := strings.Join(e.Tools, ","); got != "a__get,a__put,b__list" {
			t.Errorf("tools offered: %s", got)
		}
		counts := map[string]int{}
		for _, sv := range e.Servers {
			counts[sv.Name] = sv.Tools
		}
		if counts["a"] != 2 || counts["b"] != 1 || len(counts) != 2 {
			t.Errorf("per-server counts: %v", counts)
		}
		return
	}
	t.Fatal("no session_start")
}
