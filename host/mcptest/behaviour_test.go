package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

type elicitor struct {
	action mcp.ElicitationResponseAction
	calls  atomic.Int32
}

func (e *elicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.calls.Add(1)
	if !strings.HasPrefix(req.Params.Message, "Confirm confirm2?") {
		return nil, errors.New("unexpected message " + req.Params.Message)
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: e.action, Content: map[string]any{"ok": true},
	}}, nil
}

// TestInputRequiredWithMCPGo runs the MRTR rounds through mcp-go's own
// retry loop and elicitation handler, in both eras and transports.
func TestInputRequiredWithMCPGo(t *testing.T) {
	for _, tr := range transports {
		for _, legacy := range []bool{true, false} {
			for _, action := range []mcp.ElicitationResponseAction{mcp.ElicitationResponseActionAccept, mcp.ElicitationResponseActionDecline} {
				t.Run(tr+map[bool]string{true: "/legacy/", false: "/modern/"}[legacy]+string(action), func(t *testing.T) {
					handler := &elicitor{action: action}
					c, srv := mcpSetup(t, tr, legacy, nil, testOptions(t), client.WithElicitationHandler(handler))
					res, err := callTool(ctxTimeout(t, 10*time.Second), c, "confirm2", nil)
					if err != nil {
						t.Fatalf("call: %v", err)
					}
					calls := srv.Recording().Messages("tools/call")
					if action == mcp.ElicitationResponseActionDecline {
						if !res.IsError || handler.calls.Load() != 1 || len(calls) != 2 {
							t.Errorf("declined: isError=%v elicitations=%d calls=%d", res.IsError, handler.calls.Load(), len(calls))
						}
						return
					}
					if res.IsError || !strings.Contains(resultText(t, res), `"tool":"confirm2"`) {
						t.Errorf("final result %+v", res)
					}
					if handler.calls.Load() != 2 || len(calls) != 3 {
						t.Fatalf("elicitations=%d calls=%d, want 2 and 3", handler.calls.Load(), len(calls))
					}
					states := map[string]bool{}
					for i, call := range calls {
						p := call.Params()
						var state string
						_ = json.Unmarshal(p["requestState"], &state)
						if (i == 0) != (state == "") {
							t.Errorf("call %d requestState %q", i, state)
						}
						states[state] = true
						if i > 0 && !strings.Contains(string(p["inputResponses"]), `"action":"accept"`) {
							t.Errorf("retry %d inputResponses %s", i, p["inputResponses"])
						}
					}
					if len(states) != 3 {
						t.Errorf("requestState did not encode the round: %v", states)
					}
				})
			}
		}
	}
}

// TestInputRequiredSecureRetry: a retry must carry the same secureArguments.
func TestInputRequiredSecureRetry(t *testing.T) {
	peer, _ := newRPC(t, "stdio", true, []string{SecureParamsExtension}, testOptions(t))
	secure := map[string]any{"token": canaryToken}
	first, _ := peer.call("tools/call", map[string]any{"name": "confirm_secure", "secureArguments": secure})
	var ir struct {
		ResultType    string                     `json:"resultType"`
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(first.Result, &ir); err != nil || ir.ResultType != "input_required" || ir.RequestState == "" {
		t.Fatalf("first answer %s", first.Result)
	}
	if !strings.Contains(string(ir.InputRequests["confirm"]), `"method":"elicitation/create"`) {
		t.Errorf("input request %s", ir.InputRequests["confirm"])
	}
	if strings.Contains(ir.RequestState, canaryToken) || strings.Contains(string(first.Result), canaryToken) {
		t.Error("requestState carries the secure value")
	}
	accept := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}
	cases := []struct {
		name    string
		secure  any
		state   string
		wantMsg string
	}{
		{"changed value", map[string]any{"token": "other"}, ir.RequestState, "secureArguments must be re-sent unchanged when retrying with requestState"},
		{"dropped", nil, ir.RequestState, `missing required secure parameter "token" in secureArguments`},
		{"forged state", secure, ir.RequestState + "x", "invalid requestState"},
		{"same values", secure, ir.RequestState, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			params := map[string]any{"name": "confirm_secure", "requestState": tc.state, "inputResponses": accept}
			if tc.secure != nil {
				params["secureArguments"] = tc.secure
			}
			resp, _ := peer.call("tools/call", params)
			if tc.wantMsg == "" {
				if resp.Error != nil || !strings.Contains(string(resp.Result), `"resultType":"complete"`) {
					t.Errorf("retry with the same values: %s %+v", resp.Result, resp.Error)
				}
				return
			}
			if resp.Error == nil || resp.Error.Code != CodeInvalidParams || resp.Error.Message != tc.wantMsg {
				t.Errorf("answer %+v, want -32602 %q", resp.Error, tc.wantMsg)
			}
		})
	}
}

func TestResultBehaviours(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c, srv := mcpSetup(t, tr, false, nil, testOptions(t))
			ctx := ctxTimeout(t, 10*time.Second)

			res, err := callTool(ctx, c, "failing", nil)
			if err != nil || !res.IsError || resultText(t, res) != "boom" {
				t.Errorf("failing: %+v %v", res, err)
			}
			res, err = callTool(ctx, c, "from_fixture", nil)
			if err != nil || resultText(t, res) != "fixture ok" {
				t.Errorf("fixture entry: %+v %v", res, err)
			}
			res, err = callTool(ctx, c, "structured", nil)
			if err != nil || resultText(t, res) != "three rows" {
				t.Fatalf("structured: %+v %v", res, err)
			}
			if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"rows":3}` {
				t.Errorf("structuredContent %s", got)
			}
			res, err = callTool(ctx, c, "media", nil)
			if err != nil || len(res.Content) != 2 {
				t.Fatalf("media: %+v %v", res, err)
			}
			if img, ok := res.Content[0].(mcp.ImageContent); !ok || img.MIMEType != "image/png" || img.Data != "aGk=" {
				t.Errorf("image content %#v", res.Content[0])
			}
			if _, ok := res.Content[1].(mcp.EmbeddedResource); !ok {
				t.Errorf("resource content %#v", res.Content[1])
			}

			_, err = callTool(ctx, c, "err_internal", nil)
			if !errors.Is(err, mcp.ErrInternalError) || !strings.Contains(err.Error(), "db down") {
				t.Errorf("err_internal: %v", err)
			}
			_, err = callTool(ctx, c, "err_params", nil)
			if !errors.Is(err, mcp.ErrInvalidParams) {
				t.Errorf("err_params: %v", err)
			}
			_, err = callTool(ctx, c, "err_capability", nil)
			var missing mcp.MissingRequiredClientCapabilityError
			if !errors.As(err, &missing) {
				t.Errorf("err_capability: %v", err)
			}
			sent := srv.Recording().Sent("tools/call")
			var resp Response
			if err := sent[len(sent)-1].Decode(&resp); err != nil || resp.Error == nil ||
				string(resp.Error.Data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/secure-params":{}}}}` {
				t.Errorf("err_capability wire answer %s", sent[len(sent)-1].Message)
			}
		})
	}
}

// TestCancellation: a sleeping call whose caller gives up is never answered.
func TestCancellation(t *testing.T) {
	for _, tr := range transports {
		for _, legacy := range []bool{true, false} {
			t.Run(tr+map[bool]string{true: "/legacy", false: "/modern"}[legacy], func(t *testing.T) {
				t.Parallel() // each waits out the tool's sleep
				c, srv := mcpSetup(t, tr, legacy, nil, testOptions(t))
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				if _, err := callTool(ctx, c, "slow", nil); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("slow call: %v", err)
				}
				if tr == "stdio" {
					if _, err := srv.Recording().WaitFor(ctxTimeout(t, 5*time.Second), "notifications/cancelled", 1); err != nil {
						t.Fatal(err)
					}
				}
				// Longer than the tool's sleep: an uncancelled handler would answer now.
				time.Sleep(500 * time.Millisecond)
				if sent := srv.Recording().Sent("tools/call"); len(sent) != 0 {
					t.Errorf("cancelled call was answered: %s", sent[0].Message)
				}
				if _, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{}); err != nil {
					t.Errorf("server unusable after a cancel: %v", err)
				}
			})
		}
	}
}

func TestHangNeverAnswers(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			c, srv := mcpSetup(t, tr, false, nil, testOptions(t))
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			if _, err := callTool(ctx, c, "hang", nil); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("hang call: %v", err)
			}
			if sent := srv.Recording().Sent("tools/call"); len(sent) != 0 {
				t.Errorf("hang answered: %s", sent[0].Message)
			}
		})
	}
}

func TestDie(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		srv := newServer(t, testOptions(t))
		raw := newRawStdio(t, srv)
		peer := &stdioRPC{raw: raw, modern: true}
		if resp, _ := peer.call("tools/call", map[string]any{"name": "echo"}); resp.Error != nil {
			t.Fatal(resp.Error)
		}
		raw.send(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": withMeta(map[string]any{"name": "die"}, true, nil)})
		if err := raw.pipes.wait(t); !errors.Is(err, ErrServerDied) {
			t.Fatalf("ServeStdio returned %v, want ErrServerDied", err)
		}
		if line, ok := <-raw.lines; ok {
			t.Errorf("dead server wrote %s", line)
		}
	})
	t.Run("http", func(t *testing.T) {
		c, srv := mcpSetup(t, "http", false, nil, testOptions(t))
		if _, err := callTool(ctxTimeout(t, 5*time.Second), c, "die", nil); err == nil {
			t.Fatal("die call succeeded")
		}
		<-srv.Died()
		if _, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{}); err == nil {
			t.Error("dead HTTP server still answers")
		}
	})
	t.Run("die-after", func(t *testing.T) {
		opts := testOptions(t)
		opts.DieAfter = 2
		srv := newServer(t, opts)
		raw := newRawStdio(t, srv)
		peer := &stdioRPC{raw: raw, modern: true}
		for range 2 {
			if resp, _ := peer.call("tools/list", nil); resp.Error != nil {
				t.Fatal(resp.Error)
			}
		}
		raw.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": withMeta(nil, true, nil)})
		if err := raw.pipes.wait(t); !errors.Is(err, ErrServerDied) {
			t.Fatalf("ServeStdio returned %v after die-after", err)
		}
	})
}

type notifications struct {
	mu  sync.Mutex
	got []mcp.JSONRPCNotification
	ch  chan struct{}
}

func (n *notifications) handle(note mcp.JSONRPCNotification) {
	if note.Method != methodToolsListChanged {
		return
	}
	n.mu.Lock()
	n.got = append(n.got, note)
	n.mu.Unlock()
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

func (n *notifications) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.got)
}

// TestListChanged covers every delivery path mcp-go v1.2.1 can receive.
func TestListChanged(t *testing.T) {
	cases := []struct {
		name      string
		transport string
		legacy    bool
		listen    bool // modern: subscriptions/listen; legacy HTTP: GET stream
		wantNote  bool
	}{
		{"stdio legacy: on the connection", "stdio", true, false, true},
		{"http legacy: in the call's SSE response", "http", true, false, true},
		{"http legacy: on the GET stream", "http", true, true, true},
		{"stdio modern: subscriptions/listen", "stdio", false, true, true},
		{"http modern: subscriptions/listen", "http", false, true, true},
		{"stdio modern: not subscribed, nothing", "stdio", false, false, false},
		{"http modern: not subscribed, nothing", "http", false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			notes := &notifications{ch: make(chan struct{}, 1)}
			var url string
			var srv *Server
			if tc.transport == "http" {
				url, srv = StartHTTP(t, testOptions(t))
			} else {
				srv = newServer(t, testOptions(t))
			}
			var c *client.Client
			if tc.transport == "http" && tc.legacy && tc.listen {
				h, err := transportStreamable(url, true)
				if err != nil {
					t.Fatal(err)
				}
				c, _ = connect(t, h, true, nil)
				waitUntil(t, "the GET stream", func() bool {
					for _, m := range srv.Recording().Messages("") {
						if m.HTTPMethod == "GET" && string(m.Message) == "null" && !m.Invalid {
							return true
						}
					}
					return false
				})
				waitUntil(t, "the GET stream to register", func() bool { return srv.subscriberCount() > 0 })
			} else {
				c, _ = mcpClient(t, tc.transport, srv, url, tc.legacy, nil)
			}
			c.OnNotification(notes.handle)
			if !tc.legacy && tc.listen {
				stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				waitUntil(t, "the subscription", func() bool { return len(srv.Recording().Sent(methodSubscriptionsAck)) > 0 })
			}
			ctx := ctxTimeout(t, 10*time.Second)
			if _, err := callTool(ctx, c, "switch", nil); err != nil {
				t.Fatalf("switch: %v", err)
			}
			if tc.wantNote {
				select {
				case <-notes.ch:
				case <-time.After(5 * time.Second):
					t.Fatal("no notifications/tools/list_changed")
				}
				if !tc.legacy {
					note := notes.got[0]
					if note.Params.Meta[wire.MetaSubscriptionID] == nil {
						t.Errorf("modern notification not tagged with the subscription id: %+v", note.Params)
					}
				}
			} else if n := len(srv.Recording().Sent(methodToolsListChanged)); n != 0 || notes.count() != 0 {
				t.Errorf("unsubscribed modern client got %d notifications", n)
			}
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "after_switch" {
				t.Errorf("tools after switch: %+v %v", list, err)
			}
		})
	}
}

func TestPagination(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			opts := testOptions(t)
			opts.PageSize = 4
			c, srv := mcpSetup(t, tr, false, nil, opts)
			ctx := ctxTimeout(t, 10*time.Second)
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tools) != len(toolsWithoutExtension) {
				t.Errorf("%d tools across pages, want %d", len(list.Tools), len(toolsWithoutExtension))
			}
			pages := (len(toolsWithoutExtension) + 3) / 4
			if n := len(srv.Recording().Messages("tools/list")); n != pages {
				t.Errorf("%d tools/list requests, want %d", n, pages)
			}
			first, err := c.ListToolsByPage(ctx, mcp.ListToolsRequest{})
			if err != nil || first.NextCursor == "" {
				t.Fatalf("first page: %+v %v", first, err)
			}
			bad := mcp.ListToolsRequest{}
			bad.Params.Cursor = "bm90LW91cnM"
			if _, err := c.ListToolsByPage(ctx, bad); !errors.Is(err, mcp.ErrInvalidParams) {
				t.Errorf("forged cursor: %v", err)
			}
			if _, err := callTool(ctx, c, "switch", nil); err != nil {
				t.Fatal(err)
			}
			stale := mcp.ListToolsRequest{}
			stale.Params.Cursor = first.NextCursor
			if _, err := c.ListToolsByPage(ctx, stale); !errors.Is(err, mcp.ErrInvalidParams) {
				t.Errorf("stale cursor after a list change: %v", err)
			}
		})
	}
}
