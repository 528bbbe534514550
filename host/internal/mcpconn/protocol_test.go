package mcpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestMessageProblem(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":` + nested(9000) + `}}`, ""},
		{`this is not JSON {`, "not JSON (syntax error at byte 2)"},
		{`{"jsonrpc":"2.0","id":1,"result":`, "not JSON (syntax error at byte 33)"},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":` + nested(20000) + `}}`, "nested too deeply"},
		{`[1,2]`, "not a JSON object"},
		{`"text"`, "not a JSON object"},
	}
	for _, tc := range tests {
		if got := messageProblem([]byte(tc.msg)); got != tc.want {
			t.Errorf("messageProblem(%.40q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

// readAllLines is every line g hands on, each ended by a newline.
func readAllLines(g *lineGuard) string {
	var out strings.Builder
	for {
		line, err := g.readLine()
		if err != nil {
			return out.String()
		}
		out.Write(line)
		out.WriteByte('\n')
	}
}

// TestLineGuard: lines are handed on without their surrounding space,
// blank ones skipped; an oversized one is reported, and never quoted.
func TestLineGuard(t *testing.T) {
	const secret = "sk-do-not-echo"
	valid := `{"jsonrpc":"2.0","id":1,"result":{}}`
	input := strings.Join([]string{
		valid,
		"",
		"  \r",
		"garbage " + secret,
		`{"jsonrpc":"2.0","id":3,"result":"` + secret + strings.Repeat("x", 70000) + `"}`,
		`{"jsonrpc":"2.0","id":4,"result":{}}` + "\r",
		"unterminated",
	}, "\n")
	var failures []string
	g := newLineGuard(strings.NewReader(input), 64<<10, func(err *ProtocolError) {
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%v is not ErrProtocol", err)
		}
		failures = append(failures, err.Error())
	})
	if out, want := readAllLines(g), valid+"\n"+"garbage "+secret+"\n"+`{"jsonrpc":"2.0","id":4,"result":{}}`+"\n"; out != want {
		t.Errorf("passed on %q, want %q", out, want)
	}
	want := []string{"server sent a message larger than 64 KiB (limits.maxResponseBytes)"}
	if strings.Join(failures, "|") != strings.Join(want, "|") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(failures, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(failures, ""), secret) {
		t.Error("a failure quotes the line")
	}
}

func FuzzLineGuard(f *testing.F) {
	for _, seed := range []string{"{}\n", "x\n{}\n", "\n\n", `{"a":[[[]]]}` + "\n" + strings.Repeat("y", 300) + "\n{}", "\r\n{}\r\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g := newLineGuard(strings.NewReader(in), 256, func(*ProtocolError) {})
		for _, line := range strings.SplitAfter(readAllLines(g), "\n") {
			if line == "" {
				continue
			}
			msg := strings.TrimSuffix(line, "\n")
			if len(msg) == 0 || len(msg) > 256 || string(bytes.TrimSpace([]byte(msg))) != msg || !strings.Contains(in, msg) {
				t.Fatalf("passed on %q", line)
			}
		}
	})
}

func TestEventGuard(t *testing.T) {
	stream := "event: endpoint\ndata: /messages?session=1\n\n" + // not JSON, not a message
		": comment\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n" +
		"data: garbage sk-secret\r\n\r\n" +
		"event: message\ndata: " + nested(20000) + "\n\n" +
		"data: [1]\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	var failures []string
	g := &eventGuard{body: io.NopCloser(strings.NewReader(stream)), max: 1 << 20, fail: func(err *ProtocolError) {
		failures = append(failures, err.Error())
	}}
	out, err := io.ReadAll(g)
	if err != nil || string(out) != stream {
		t.Fatalf("read %d bytes, %v; want the stream as it is", len(out), err)
	}
	want := "server sent a response that is not valid JSON-RPC: not JSON (syntax error at byte 1)|" +
		"server sent a response that is not valid JSON-RPC: nested too deeply|" +
		"server sent a response that is not valid JSON-RPC: not a JSON object"
	if strings.Join(failures, "|") != want {
		t.Errorf("failures %q, want %q", failures, want)
	}

	// One event beyond the limit ends the stream.
	failures = nil
	big := "data: {\"a\":\"" + strings.Repeat("x", 2000) + "\"}\n\n"
	g = &eventGuard{body: io.NopCloser(strings.NewReader("data: {}\n\n" + big)), max: 1024, fail: func(err *ProtocolError) {
		failures = append(failures, err.Error())
	}}
	_, err = io.ReadAll(g)
	if !errors.Is(err, ErrProtocol) || len(failures) != 1 || !strings.Contains(failures[0], "larger than 1 KiB") {
		t.Fatalf("err %v, failures %q; want one too-large failure", err, failures)
	}
}

func FuzzEventGuard(f *testing.F) {
	for _, seed := range []string{"data: {}\n\n", "data: x\r\n\r\n", "event: endpoint\ndata: /x\n\n", "data: {\ndata: }\n\n", "\n\n\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g := &eventGuard{body: io.NopCloser(strings.NewReader(in)), max: 128, fail: func(*ProtocolError) {}}
		out, err := io.ReadAll(g)
		if err == nil && string(out) != in {
			t.Fatalf("the stream changed: %q -> %q", in, out)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	for _, size := range []int{0, 1023, 1024, 1025, 5000} {
		b := &bodyLimit{body: io.NopCloser(strings.NewReader(strings.Repeat("x", size))), max: 1024}
		out, err := io.ReadAll(b)
		if size <= 1024 {
			if err != nil || len(out) != size {
				t.Errorf("%d bytes: read %d, %v", size, len(out), err)
			}
			continue
		}
		if !errors.Is(err, ErrProtocol) || len(out) > 1024 {
			t.Errorf("%d bytes: read %d, %v; want at most 1024 and a protocol error", size, len(out), err)
		}
	}
}

// blockingTransport answers no request: SendRequest waits for its context.
type blockingTransport struct{ transport.Interface }

func (blockingTransport) SendRequest(ctx context.Context, _ transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestPendingRequestsFailAtOnce: a protocol failure the reader reports
// ends every request in flight with that error, not with its timeout.
func TestPendingRequestsFailAtOnce(t *testing.T) {
	pending := &pendingRequests{}
	w, _ := newWire(blockingTransport{}, pending, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := w.SendRequest(ctx, transport.JSONRPCRequest{ID: mcp.NewRequestId(int64(i)), Method: "tools/call"})
			errs <- err
		}()
	}
	for {
		pending.mu.Lock()
		n := len(pending.m)
		pending.mu.Unlock()
		if n == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	pending.failAll(invalidMessage("not JSON"))
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not valid JSON-RPC: not JSON") {
			t.Fatalf("error %v, want the protocol error", err)
		}
	}
	if len(pending.m) != 0 {
		t.Errorf("%d requests still tracked", len(pending.m))
	}
}

// TestHTTPEventStreamGarbageFailsItsRequest: a garbage event on a
// request's own response stream fails that request at once, though the
// server keeps the stream open; the other request in flight is untouched.
func TestHTTPEventStreamGarbageFailsItsRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if bytes.Contains(body, []byte(`"id":1`)) {
			fmt.Fprint(w, "data: not json\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	pending := &pendingRequests{}
	inner, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPBasicClient((&Conn{maxResponseBytes: 1 << 20}).httpClient(pending.failAll, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := newWire(inner, pending, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other := make(chan error, 1)
	otherCtx, stopOther := context.WithCancel(ctx)
	go func() {
		_, err := w.SendRequest(otherCtx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(2)), Method: "tools/list"})
		other <- err
	}()
	_, err = w.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/list"})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not valid JSON-RPC") {
		t.Fatalf("error %v, want the protocol error", err)
	}
	select {
	case err := <-other:
		t.Fatalf("the other request ended too: %v", err)
	default:
	}
	stopOther()
	if err := <-other; errors.Is(err, ErrProtocol) {
		t.Fatalf("the other request failed with %v", err)
	}
}

// Lines longer than the guard's read buffer are assembled and handed on
// whole, and the short lines around them (handed on from the buffer
// itself) are not disturbed by them.
func TestLineGuardLongLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("a", 100<<10) + `"}`
	tooLong := `{"jsonrpc":"2.0","id":2,"result":"` + strings.Repeat("b", 300<<10) + `"}`
	short := func(id int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id) }
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
		fails int
	}{
		{"long between short", []string{short(10), long, short(11)}, []string{short(10), long, short(11)}, 0},
		{"too long between short", []string{short(10), tooLong, short(11)}, []string{short(10), short(11)}, 1},
		{"long after too long", []string{tooLong, long, short(12)}, []string{long, short(12)}, 1},
		{"long last, unterminated", []string{short(10), long + "\n" + long[:1000]}, []string{short(10), long}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails := 0
			g := newLineGuard(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), 256<<10, func(*ProtocolError) { fails++ })
			if strings.HasSuffix(tc.name, "unterminated") {
				g = newLineGuard(strings.NewReader(strings.Join(tc.lines, "\n")), 256<<10, func(*ProtocolError) { fails++ })
			}
			out := readAllLines(g)
			if want := strings.Join(tc.want, "\n") + "\n"; out != want {
				t.Errorf("passed on %d bytes, want %d", len(out), len(want))
			}
			if fails != tc.fails {
				t.Errorf("%d failures, want %d", fails, tc.fails)
			}
		})
	}
}
