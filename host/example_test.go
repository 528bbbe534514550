package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// exampleServer serves one SQL-like tool whose instance is a secure
// parameter, on a loopback HTTP server.
func exampleServer() (url string, stop func()) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[
	 {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
	  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
	  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}},
	 {"name": "delete_rows", "inputSchema": {"type": "object", "properties": {"where": {"type": "string"}}},
	  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
	  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 1}}]`),
		Handler: func(_ context.Context, tool string, args, secure map[string]json.RawMessage) (string, bool) {
			return fmt.Sprintf("%s ran on instance %s", tool, secure["instance"]), false
		}})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.HTTPHandler())
	return ts.URL + "/mcp", func() { _ = srv.Close(); ts.Close() }
}

// exampleConfig is a config built in Go: the instance comes from each
// session's values, the token from the backend's own credential source.
func exampleConfig(url string) *config.Config {
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {URL: url, TrustAnnotations: true}},
		Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
			// Not a secret: results may show it (secrets are masked in them).
			"instance": {Session: "instance", Sensitivity: "public"},
			"token":    {Source: "tenant-tokens", Ref: "db"},
		}}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
			{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1},
		}},
	}
	cfg.ApplyDefaults()
	return cfg
}

// tenantTokens is a chat backend's own credential source: one token per
// tenant (the session's subject).
var tenantTokens = bindings.SourceFunc(func(_ context.Context, req bindings.Request) (bindings.Resolved, error) {
	return bindings.Resolved{Value: "token-for-" + req.Subject, Sensitivity: bindings.Secret, Expiry: time.Now().Add(time.Hour)}, nil
})

// Many sessions share one Host; each has its own tenant, trust level and
// session values, and the secure parameters follow the session.
func ExampleHost_NewSession() {
	url, stop := exampleServer()
	defer stop()
	h, err := host.New(host.Options{Config: exampleConfig(url), Sources: map[string]bindings.Source{"tenant-tokens": tenantTokens}})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	h.Connect(context.Background())

	for _, tenant := range []struct{ subject, instance string }{{"acme", "acme-db"}, {"globex", "globex-db"}} {
		s := h.NewSession(host.SessionOptions{Subject: tenant.subject, Values: map[string]string{"instance": tenant.instance}})
		res, err := s.CallTool(context.Background(), "db", "execute_sql", json.RawMessage(`{"query":"SELECT 1"}`))
		if err != nil {
			panic(err)
		}
		fmt.Println(tenant.subject+":", host.ContentText(res.Result.Content[0]))
		s.Close()
	}
	// Output:
	// acme: execute_sql ran on instance "acme-db"
	// globex: execute_sql ran on instance "globex-db"
}

// oneShotModel is a backend's own model client: it asks for one delete,
// then answers.
type oneShotModel struct{}

func (oneShotModel) Generate(_ context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			if yield(&model.Response{Partial: true, Message: model.Message{Content: "Done."}}, nil) {
				yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "Done."}}, nil)
			}
			return
		}
		yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "db__delete_rows", Arguments: `{"where":"id = 7"}`},
		}}}, nil)
	}
}

// A turn streams events as they happen. The backend brings its own model
// client, a pending-approvals queue that another goroutine (an HTTP handler,
// say) resolves, and its own audit sink.
func ExampleSession_Turn() {
	url, stop := exampleServer()
	defer stop()
	queue := approvals.NewQueue(approvals.QueueOptions{})
	// The sink runs on the call's goroutine: collect, print after the turn.
	var (
		auditMu sync.Mutex
		trail   []string
	)
	audit := auditlog.SinkFunc(func(_ context.Context, r *auditlog.Record) error {
		auditMu.Lock()
		defer auditMu.Unlock()
		trail = append(trail, fmt.Sprintf("audit: %s %s %s %s", r.Phase, r.Tool, r.Outcome, r.Result))
		return nil
	})
	h, err := host.New(host.Options{
		Config:   exampleConfig(url),
		Sources:  map[string]bindings.Source{"tenant-tokens": tenantTokens},
		Model:    oneShotModel{},
		Approver: queue,
		Audit:    audit,
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()

	// The approver: in a backend this is an HTTP handler.
	go func() {
		for {
			if pending := queue.List(); len(pending) > 0 {
				_ = queue.Resolve(pending[0].ID, "ops-lead", true, "fine")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	s := h.NewSession(host.SessionOptions{Subject: "acme", Values: map[string]string{"instance": "acme-db"}})
	for e := range s.Turn(context.Background(), "Delete row 7.", host.TurnOptions{}) {
		switch e.Type {
		case host.EventToolCall:
			fmt.Println("tool call:", e.Server, e.Tool, string(e.Arguments))
		case host.EventApproval:
			fmt.Println("approval:", e.Decision, e.Outcome)
		case host.EventToolResult:
			fmt.Println("result:", host.ContentText(e.Content[0]))
		case host.EventAssistant:
			fmt.Println("assistant:", e.Text)
		case host.EventSessionEnd:
			fmt.Println("end:", e.Reason)
		}
	}
	auditMu.Lock()
	defer auditMu.Unlock()
	for _, line := range trail {
		fmt.Println(line)
	}
	// Output:
	// tool call: db delete_rows {"where":"id = 7"}
	// approval: ask approved
	// result: delete_rows ran on instance "acme-db"
	// assistant: Done.
	// end: done
	// audit: decision delete_rows approved pending
	// audit: result delete_rows approved ok
}

// A turn is cancelled through its context: the loop stops and ends with
// reason "interrupted".
func ExampleSession_Turn_cancel() {
	url, stop := exampleServer()
	defer stop()
	h, err := host.New(host.Options{Config: exampleConfig(url), Model: oneShotModel{},
		Sources: map[string]bindings.Source{"tenant-tokens": tenantTokens}})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for e := range h.NewSession(host.SessionOptions{}).Turn(ctx, "hello", host.TurnOptions{}) {
		if e.Type == host.EventSessionEnd {
			fmt.Println("end:", e.Reason)
		}
	}
	// Output:
	// end: interrupted
}

// A conversation outlives the Session value when the session has a History:
// a backend that restarts (or another replica) opens a session with the same
// id and History, and the next turn continues the conversation. A real
// backend implements History over its own database; MemoryHistory shows the
// shape.
func ExampleHistory() {
	url, stop := exampleServer()
	defer stop()
	answers := model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		return model.Message{Content: fmt.Sprintf("this conversation has %d messages", len(req.Messages))}, model.Usage{}, nil
	})
	h, err := host.New(host.Options{Config: exampleConfig(url), Model: answers,
		Sources: map[string]bindings.Source{"tenant-tokens": tenantTokens}})
	if err != nil {
		panic(err)
	}
	defer h.Close()

	history := host.NewMemoryHistory()
	for _, prompt := range []string{"first", "second"} {
		// A new Session value each time, as after a restart.
		s := h.NewSession(host.SessionOptions{ID: "conversation-42", History: history})
		for e := range s.Turn(context.Background(), prompt, host.TurnOptions{}) {
			if e.Type == host.EventAssistant {
				fmt.Println(e.Text)
			}
		}
	}
	// Output:
	// this conversation has 1 messages
	// this conversation has 3 messages
}
