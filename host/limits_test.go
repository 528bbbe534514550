package host

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// TestToolResultForTheModelIsCut: the model gets at most
// maxModelResultBytes of a result (with the note); the session's events
// keep the whole result.
func TestToolResultForTheModelIsCut(t *testing.T) {
	big := strings.Repeat("r", 300<<10)
	tools := `[{"name":"dump","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"x-test":{"text":` + string(mustJSON(t, big)) + `}}]`
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(tools)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	llm := &captureModel{}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {}},
		Approvals:  readsAllowed(),
		Limits:     config.Limits{MaxModelResultBytes: 100 << 10},
	}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Model: llm.llm(), Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) { return srv.InProcessTransport(), nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	sess := h.NewSession(SessionOptions{})
	var shown int
	for e := range sess.Turn(context.Background(), "go", TurnOptions{MaxSteps: 3}) {
		if e.Type == EventToolResult {
			shown = len(ContentsText(e.Content, ""))
		}
		if e.Type == EventError {
			t.Fatalf("error event: %s", e.Error)
		}
	}
	if shown != len(big) {
		t.Errorf("the tool_result event has %d bytes, want the whole %d", shown, len(big))
	}
	sent := llm.toolMessage(t, "c1")
	if len(sent) > 100<<10+200 || !strings.HasPrefix(sent, strings.Repeat("r", 100<<10)) ||
		!strings.Contains(sent, "[agenthost: the tool result was cut here: 204800 of its 307200 bytes were left out") {
		t.Errorf("the model got %d bytes ending %q", len(sent), sent[max(0, len(sent)-200):])
	}
}

// TestOversizedDefinitionIsExcluded: a definition beyond
// maxDefinitionBytes is excluded (with the reason) before it is parsed;
// the server's other tools stay.
func TestOversizedDefinitionIsExcluded(t *testing.T) {
	desc := strings.Repeat("d", 2<<20)
	tools := `[{"name":"huge","description":` + string(mustJSON(t, desc)) + `,"inputSchema":{"type":"object"}},` +
		`{"name":"small","inputSchema":{"type":"object"}}]`
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(tools)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{MCPServers: map[string]*config.Server{"s": {}}}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
		"s": func() (transport.Interface, error) { return srv.InProcessTransport(), nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	snap := h.Server("s")
	if snap.Status != StatusConnected || len(snap.Tools) != 2 {
		t.Fatalf("snapshot %s %q with %d tools", snap.Status, snap.Error, len(snap.Tools))
	}
	huge, small := snap.Tools[0], snap.Tools[1]
	want := `the definition of "huge" is 2.0 MiB, more than limits.maxDefinitionBytes (1 MiB)`
	if huge.Status != ToolExcluded || huge.Reason != want {
		t.Errorf("huge: %s %q, want excluded with %q", huge.Status, huge.Reason, want)
	}
	if small.Status != ToolActive {
		t.Errorf("small: %s %q", small.Status, small.Reason)
	}
}

// captureModel calls db__dump once, then answers "done"; it keeps the
// messages of its last request.
type captureModel struct {
	mu   sync.Mutex
	n    int
	last []model.Message
}

func (m *captureModel) llm() model.LLM {
	return model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.n++
		m.last = req.Messages
		if m.n == 1 {
			return model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "db__dump", Arguments: "{}"}}}, model.Usage{}, nil
		}
		return model.Message{Content: "done"}, model.Usage{}, nil
	})
}

func (m *captureModel) toolMessage(t *testing.T, id string) string {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, msg := range m.last {
		if msg.Role == model.RoleTool && msg.ToolCallID == id {
			return msg.Content
		}
	}
	t.Fatalf("no tool message for %s in the last request", id)
	return ""
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
