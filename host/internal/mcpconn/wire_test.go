package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// recordingTransport keeps the last request; httpRecordingTransport is the
// same as an HTTPConnection.
type recordingTransport struct {
	transport.Interface
	last transport.JSONRPCRequest
}

func (r *recordingTransport) SendRequest(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	r.last = req
	return &transport.JSONRPCResponse{Result: json.RawMessage(`{}`)}, nil
}

type httpRecordingTransport struct{ *recordingTransport }

func (httpRecordingTransport) SetProtocolVersion(string) {}

// recordingSeam is a seam around a recordingTransport (an HTTP one when
// http is set) at protocol version.
func recordingSeam(http bool, version string) (transport.Interface, *recordingTransport) {
	rec := &recordingTransport{}
	var inner transport.Interface = rec
	if http {
		inner = httpRecordingTransport{rec}
	}
	seam, _ := newWire(inner, nil, nil)
	if v, ok := seam.(interface{ SetProtocolVersion(string) }); ok {
		v.SetProtocolVersion(version)
	}
	return seam, rec
}

func TestSecureHeadersOnlyOverHTTP(t *testing.T) {
	call, err := NewSecureArgs("execute_sql", map[string]any{"region": "eu"}, map[string]string{"Mcp-Param-Region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, version string
		http, want          bool
	}{
		{"http", "execute_sql", "2026-07-28", true, true},
		{"http, 2025-11-25", "execute_sql", "2025-11-25", true, false},
		{"stdio", "execute_sql", "2026-07-28", false, false},
		{"http, another tool", "drop_all", "2026-07-28", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seam, rec := recordingSeam(tc.http, tc.version)
			params := map[string]json.RawMessage{"name": json.RawMessage(`"` + tc.tool + `"`)}
			x := &exchange{method: "tools/call", secure: call}
			header := http.Header{"X-Keep": {"1"}}
			if _, err := seam.SendRequest(x.bind(context.Background()), transport.JSONRPCRequest{Method: "tools/call", Params: params, Header: header}); err != nil {
				t.Fatal(err)
			}
			if got := rec.last.Header.Get("Mcp-Param-Region") != ""; got != tc.want {
				t.Errorf("Mcp-Param-Region sent = %v, want %v (headers %v)", got, tc.want, rec.last.Header)
			}
			if len(header) != 1 {
				t.Errorf("the caller's header was modified: %v", header)
			}
		})
	}
}

// An exchange's secure values go with the requests that name it, on every
// round, and with no other request: not one that names no exchange, not
// one that names another, not one that names it after it closed. The name
// is never sent.
func TestExchangeBindsSecureValuesToOneCall(t *testing.T) {
	rec := &recordingTransport{}
	seam, _ := newWire(rec, nil, nil)
	mine, err := NewSecureArgs("t", map[string]any{"token": "mine"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := NewSecureArgs("t", map[string]any{"token": "theirs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	myCtx := (&exchange{method: "tools/call", secure: mine}).bind(context.Background())
	theirCtx := (&exchange{method: "tools/call", secure: theirs}).bind(context.Background())
	type spanKey struct{}
	send := func(ctx context.Context) string {
		t.Helper()
		params := mcp.CallToolParams{Name: "t", Arguments: json.RawMessage(`{}`)}
		if _, err := seam.SendRequest(ctx, transport.JSONRPCRequest{Method: "tools/call", Params: params}); err != nil {
			t.Fatal(err)
		}
		encoded, _ := json.Marshal(rec.last.Params)
		var sent struct {
			Secure map[string]string `json:"secureArguments"`
		}
		if err := json.Unmarshal(encoded, &sent); err != nil {
			t.Fatal(err)
		}
		return sent.Secure["token"]
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"first round", myCtx, "mine"},
		{"second round", myCtx, "mine"},
		{"a context mcp-go derived (its span)", context.WithValue(myCtx, spanKey{}, 1), "mine"},
		{"another call", theirCtx, "theirs"},
		{"no exchange", context.Background(), ""},
		{"an exchange for another method", (&exchange{method: "tools/list", secure: mine}).bind(context.Background()), ""},
		{"the call's input requests' handlers", exchangeFree(myCtx), ""},
		{"derived from the handlers'", context.WithValue(exchangeFree(myCtx), spanKey{}, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := send(tc.ctx); got != tc.want {
				t.Errorf("secureArguments.token = %q, want %q", got, tc.want)
			}
		})
	}
}

// The elicitation handler mcp-go calls for a call's input requests gets a
// context without the call's exchange.
func TestElicitationHandlerGetsNoExchange(t *testing.T) {
	var seen context.Context
	h := exchangeFreeElicitation{elicitFunc(func(ctx context.Context) { seen = ctx })}
	x := &exchange{method: "tools/call"}
	if _, err := h.Elicit(x.bind(context.Background()), mcp.ElicitationRequest{}); err != nil {
		t.Fatal(err)
	}
	if exchangeFor(seen, "tools/call") != nil {
		t.Error("the handler's context carries the call's exchange")
	}
}

type elicitFunc func(context.Context)

func (f elicitFunc) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	f(ctx)
	return &mcp.ElicitationResult{}, nil
}

// A listing's page reaches its exchange as the transport received it, byte
// for byte, and mcp-go gets an empty page; a listing without an exchange
// (not the host's) is mcp-go's, unchanged. The transport's response is
// never modified.
func TestListingPageReachesItsExchangeRaw(t *testing.T) {
	page := json.RawMessage(`{"tools":[{"name":"a","inputSchema":{"type":"object"},"secureInputSchema":{"type":"object"}}],"nextCursor":"n"}`)
	answer := &transport.JSONRPCResponse{Result: page}
	inner := &scriptTransport{answers: []*transport.JSONRPCResponse{answer, answer}}
	seam, _ := newWire(inner, nil, nil)
	x := &exchange{method: "tools/list"}
	resp, err := seam.SendRequest(x.bind(context.Background()), transport.JSONRPCRequest{Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.result, page) {
		t.Errorf("the exchange got %s, want the page", x.result)
	}
	if string(resp.Result) != string(emptyToolsPage) {
		t.Errorf("mcp-go got %s, want the empty page", resp.Result)
	}
	if !bytes.Equal(answer.Result, page) {
		t.Errorf("the transport's response was modified: %s", answer.Result)
	}
	resp, err = seam.SendRequest(context.Background(), transport.JSONRPCRequest{Method: "tools/list"})
	if err != nil || !bytes.Equal(resp.Result, page) {
		t.Errorf("a listing without an exchange got %s, %v", resp.Result, err)
	}
}

// x-mcp-header arguments are mirrored into Mcp-Param-* headers from the
// call's exchange, on HTTP in the 2026-07-28 era only.
func TestParamHeadersFromTheExchange(t *testing.T) {
	tool := &mcp.Tool{Name: "t", InputSchema: mcp.ToolInputSchema{Type: "object",
		Properties: map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}}}}
	for _, tc := range []struct {
		name, version string
		http, tool    bool
		want          string
	}{
		{"http", "2026-07-28", true, true, "eu"},
		{"http, 2025-11-25", "2025-11-25", true, true, ""},
		{"stdio", "2026-07-28", false, true, ""},
		{"no header tool", "2026-07-28", true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seam, rec := recordingSeam(tc.http, tc.version)
			x := &exchange{method: "tools/call"}
			if tc.tool {
				x.headerTool = tool
			}
			params := map[string]json.RawMessage{"name": json.RawMessage(`"t"`), "arguments": json.RawMessage(`{"region":"eu"}`)}
			if _, err := seam.SendRequest(x.bind(context.Background()), transport.JSONRPCRequest{Method: "tools/call", Params: params}); err != nil {
				t.Fatal(err)
			}
			if got := rec.last.Header.Get("Mcp-Param-Region"); got != tc.want {
				t.Errorf("Mcp-Param-Region = %q, want %q", got, tc.want)
			}
		})
	}
}

// The raw JSON-RPC error of a call comes back as an *RPCError, data and
// all, and still matches mcp-go's error for its code.
func TestCallErrorIsRaw(t *testing.T) {
	inner := errorTransport{&mcp.JSONRPCErrorDetails{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Message: "needs it",
		Data: map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{"b.ext": map[string]any{}, "a.ext": map[string]any{}}}}}}
	seam, _ := newWire(inner, nil, nil)
	_, err := seam.SendRequest(context.Background(), transport.JSONRPCRequest{Method: "tools/call", Params: mcp.CallToolParams{Name: "t"}})
	var rpc *RPCError
	if !errors.As(err, &rpc) {
		t.Fatalf("err = %v, want an *RPCError", err)
	}
	if rpc.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY || rpc.Message != "needs it" {
		t.Errorf("rpc = %+v", rpc)
	}
	if got := rpc.RequiredExtensions(); !slices.Equal(got, []string{"a.ext", "b.ext"}) {
		t.Errorf("required extensions = %v", got)
	}
	var capErr mcp.MissingRequiredClientCapabilityError
	if !errors.As(err, &capErr) {
		t.Errorf("%v does not match mcp-go's error for the code", err)
	}
	// Other methods' errors are mcp-go's to read.
	resp, err := seam.SendRequest(context.Background(), transport.JSONRPCRequest{Method: "tools/list"})
	if err != nil || resp.Error == nil {
		t.Errorf("tools/list: %v, %+v", err, resp)
	}
}

// errorTransport answers every request with one JSON-RPC error.
type errorTransport struct{ e *mcp.JSONRPCErrorDetails }

func (errorTransport) Start(context.Context) error { return nil }
func (errorTransport) Close() error                { return nil }

//lint:ignore ST1003 the name is mcp-go's transport.Interface method
func (errorTransport) GetSessionId() string { return "" }
func (errorTransport) SendNotification(context.Context, mcp.JSONRPCNotification) error {
	return nil
}
func (errorTransport) SetNotificationHandler(func(mcp.JSONRPCNotification)) {}
func (e errorTransport) SendRequest(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	return &transport.JSONRPCResponse{Error: e.e}, nil
}

// A server that refuses the version a server/discover declared while
// naming it as supported gets the probe once more, unchanged; any other
// refusal is mcp-go's to negotiate (SEP-2575).
func TestDiscoverRetriedAtItsOwnVersion(t *testing.T) {
	const version = "2026-07-28"
	meta := json.RawMessage(`{"` + mcp.MetaKeyProtocolVersion + `":"` + version + `","io.agenthost/idempotency-key":"k"}`)
	rejected := func(supported ...string) *transport.JSONRPCResponse {
		return &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION, Message: "unsupported",
			Data: map[string]any{"supported": supported, "requested": version}}}
	}
	discovered := &transport.JSONRPCResponse{Result: json.RawMessage(`{"supportedVersions":["` + version + `"],"capabilities":{}}`)}
	tests := []struct {
		name      string
		method    string
		first     *transport.JSONRPCResponse
		wantSends int
		wantError bool
	}{
		{"own version supported", "server/discover", rejected(version), 2, false},
		{"own version among others", "server/discover", rejected("2099-01-01", version), 2, false},
		{"another version", "server/discover", rejected("2099-01-01"), 1, true},
		{"no supported list", "server/discover", rejected(), 1, true},
		{"accepted", "server/discover", discovered, 1, false},
		{"other method", "tools/list", rejected(version), 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &scriptTransport{answers: []*transport.JSONRPCResponse{tt.first, discovered}}
			seam, _ := newWire(inner, nil, nil)
			params := map[string]json.RawMessage{"_meta": meta}
			resp, err := seam.SendRequest(context.Background(), transport.JSONRPCRequest{Method: tt.method, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			if len(inner.sent) != tt.wantSends {
				t.Errorf("sent %d requests, want %d", len(inner.sent), tt.wantSends)
			}
			for _, r := range inner.sent {
				if got := r.Params.(map[string]json.RawMessage)["_meta"]; !bytes.Equal(got, meta) {
					t.Errorf("resent with _meta %s, want %s", got, meta)
				}
			}
			if (resp.Error != nil) != tt.wantError {
				t.Errorf("answer %+v, want an error: %v", resp, tt.wantError)
			}
		})
	}
}

// scriptTransport answers requests with answers in turn and records them.
type scriptTransport struct {
	errorTransport
	answers []*transport.JSONRPCResponse
	sent    []transport.JSONRPCRequest
}

func (s *scriptTransport) SendRequest(_ context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	s.sent = append(s.sent, r)
	return s.answers[len(s.sent)-1], nil
}
