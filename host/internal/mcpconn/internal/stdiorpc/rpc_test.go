package stdiorpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// fakeChild is the server side of a RPC: what the transport writes
// arrives on fromHost, one line at a time, and what the test writes to
// toHost is the child's stdout.
type fakeChild struct {
	rpc      *RPC
	toHost   *io.PipeWriter
	fromHost *bufio.Reader
	failures chan *wirecheck.ProtocolError
}

func newFakeChild(t *testing.T, maxLine int64) *fakeChild {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	f := &fakeChild{toHost: outW, fromHost: bufio.NewReader(inR), failures: make(chan *wirecheck.ProtocolError, 16)}
	fail := func(err *wirecheck.ProtocolError) { f.failures <- err }
	f.rpc = NewRPC(inW, wirecheck.NewLineGuard(outR, maxLine, fail), fail, nil)
	if err := f.rpc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.rpc.Close()
		_ = outW.Close()
		_ = inR.Close()
	})
	return f
}

// send writes lines to the host, each ended by a newline.
func (f *fakeChild) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, line := range lines {
		if _, err := io.WriteString(f.toHost, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// received is the next line the host wrote.
func (f *fakeChild) received(t *testing.T) string {
	t.Helper()
	line, err := f.fromHost.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// request sends a request with id in the background; its answer comes on
// the returned channel.
func (f *fakeChild) request(ctx context.Context, id int64, method string) <-chan *transport.JSONRPCResponse {
	done := make(chan *transport.JSONRPCResponse, 1)
	go func() {
		resp, err := f.rpc.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(id), Method: method})
		if err != nil {
			resp = &transport.JSONRPCResponse{Error: &mcp.JSONRPCErrorDetails{Message: err.Error()}}
		}
		done <- resp
	}()
	return done
}

func waitAnswer(t *testing.T, ch <-chan *transport.JSONRPCResponse) *transport.JSONRPCResponse {
	t.Helper()
	select {
	case resp := <-ch:
		return resp
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
		return nil
	}
}

// What the transport writes is what mcp-go's stdio transport writes: the
// request encoded with encoding/json, one line.
func TestStdioRPCWritesWhatMcpGoWrites(t *testing.T) {
	f := newFakeChild(t, 1<<20)
	params := map[string]json.RawMessage{"name": json.RawMessage(`"t"`), "secureArguments": json.RawMessage(`{"a":"b"}`)}
	request := transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(7)), Method: "tools/call", Params: params}
	want, _ := json.Marshal(request)
	done := make(chan error, 1)
	go func() { _, err := f.rpc.SendRequest(context.Background(), request); done <- err }()
	if got := f.received(t); got != string(want)+"\n" {
		t.Errorf("wrote %q, want %q", got, want)
	}
	f.send(t, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/initialized"}}
	want, _ = json.Marshal(n)
	go func() { done <- f.rpc.SendNotification(context.Background(), n) }()
	if got := f.received(t); got != string(want)+"\n" {
		t.Errorf("wrote %q, want %q", got, want)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Answers reach the requests they answer whatever comes between them:
// notifications, the server's own requests (answered in turn), an answer
// for an id nobody waits for, answers out of order. The result is handed
// on byte for byte.
func TestStdioRPCRoutesInterleavedMessages(t *testing.T) {
	f := newFakeChild(t, 1<<20)
	var (
		mu     sync.Mutex
		notes  []mcp.JSONRPCNotification
		asked  []transport.JSONRPCRequest
		noted  = make(chan struct{}, 4)
		handed = make(chan struct{}, 4)
	)
	f.rpc.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		notes = append(notes, n)
		mu.Unlock()
		noted <- struct{}{}
	})
	f.rpc.SetRequestHandler(func(_ context.Context, r transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		handed <- struct{}{}
		return transport.NewJSONRPCResultResponse(r.ID, json.RawMessage(`{"roots":[]}`)), nil
	})
	one := f.request(context.Background(), 1, "tools/list")
	two := f.request(context.Background(), 2, "tools/call")
	f.received(t)
	f.received(t)
	page := `{"tools":[{"name":"a","inputSchema":{"type":"object"},"x-extra":{"kept":[1, 2 ,3]}}],"nextCursor":"c"}`
	f.send(t,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list","params":{"k":"v"}}`,
		`{"jsonrpc":"2.0","id":99,"result":{"stray":true}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"nope","data":{"why":"x"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"d"}}`,
		`{"jsonrpc":"2.0","id":1,"result":`+page+`}`,
	)
	if got := waitAnswer(t, one); string(got.Result) != page || got.Error != nil {
		t.Errorf("tools/list answered %s (error %+v), want the page byte for byte", got.Result, got.Error)
	}
	if got := waitAnswer(t, two); got.Error == nil || got.Error.Code != -32001 || got.Result != nil {
		t.Errorf("tools/call answered %+v, want the error", got)
	}
	<-noted
	<-noted
	<-handed
	if got, want := f.received(t), `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`+"\n"; got != want {
		t.Errorf("answered the server's request with %q, want %q", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 2 || notes[0].Method != "notifications/progress" || notes[0].Params.AdditionalFields["progressToken"] != "p" ||
		notes[1].Method != "notifications/message" {
		t.Errorf("notifications %+v", notes)
	}
	if len(asked) != 1 || asked[0].Method != "roots/list" || asked[0].ID.String() != "string:s1" ||
		asked[0].Params.(map[string]any)["k"] != "v" {
		t.Errorf("server requests %+v", asked)
	}
	select {
	case err := <-f.failures:
		t.Errorf("a valid stream reported %v", err)
	default:
	}
}

// Lines that are not JSON-RPC messages are reported, with why, and never
// quoted; they do not disturb the answers around them. A JSON object that
// is not in the shape of a message is dropped (as mcp-go drops it), and an
// oversized line is skipped. Space around a line is no error (JSON allows
// it): an answer after leading spaces and tabs is taken.
func TestStdioRPCReportsBadLines(t *testing.T) {
	const secret = "sk-do-not-echo"
	f := newFakeChild(t, 64<<10)
	one := f.request(context.Background(), 1, "ping")
	four := f.request(context.Background(), 4, "ping")
	f.received(t)
	f.received(t)
	f.send(t,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		"garbage "+secret,
		`{"jsonrpc":"2.0","id":2,"result":`+nested(20000)+`}`,
		`{"jsonrpc":"2.0","id":3,"result":"`+secret+strings.Repeat("x", 70000)+`"}`,
		"  [1,2]",
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		" \t "+`{"jsonrpc":"2.0","id":4,"result":{"ok":1}}`+" \r",
	)
	if got := waitAnswer(t, one); string(got.Result) != `{}` {
		t.Errorf("id 1 answered %+v", got)
	}
	if got := waitAnswer(t, four); string(got.Result) != `{"ok":1}` {
		t.Errorf("id 4 answered %+v", got)
	}
	want := []string{
		"server sent a response that is not valid JSON-RPC: not JSON (syntax error at byte 1)",
		"server sent a response that is not valid JSON-RPC: nested too deeply",
		"server sent a message larger than 64 KiB (limits.maxResponseBytes)",
		"server sent a response that is not valid JSON-RPC: not a JSON object",
	}
	var got []string
	for range want {
		select {
		case err := <-f.failures:
			if !errors.Is(err, wirecheck.ErrProtocol) {
				t.Errorf("%v is not wirecheck.ErrProtocol", err)
			}
			got = append(got, err.Error())
		case <-time.After(5 * time.Second):
			t.Fatalf("failures %q, want %q", got, want)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(strings.Join(got, ""), secret) {
		t.Error("a failure quotes the line")
	}
	select {
	case err := <-f.failures:
		t.Errorf("an object of the wrong shape was reported: %v", err)
	default:
	}
}

// When the child's stdout ends, the requests waiting end at once, and so
// does every later one; a request whose context ends stops waiting and
// its late answer is dropped.
func TestStdioRPCEnds(t *testing.T) {
	f := newFakeChild(t, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	late := f.request(ctx, 1, "ping")
	f.received(t)
	cancel()
	if got := waitAnswer(t, late); got.Error == nil || got.Error.Message != context.Canceled.Error() {
		t.Errorf("cancelled request: %+v", got)
	}
	f.send(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	waiting := f.request(context.Background(), 2, "ping")
	f.received(t)
	_ = f.toHost.Close()
	if got := waitAnswer(t, waiting); got.Error == nil || got.Error.Message != transport.ErrTransportClosed.Error() {
		t.Errorf("request waiting at the end: %+v", got)
	}
	if _, err := f.rpc.SendRequest(context.Background(), transport.JSONRPCRequest{ID: mcp.NewRequestId(int64(3)), Method: "ping"}); !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("request after the end: %v", err)
	}
}

// FuzzStdioRPCLines: no stream of lines makes the transport panic, a line
// is reported at most once (an unterminated last one never), whatever it
// hands a waiting request is valid JSON, and JSON's whitespace before
// every line changes nothing.
func FuzzStdioRPCLines(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"1","error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"roots/list","params":{"a":1}}`,
		"x\n{}\n[]\nnull\n", `{"id":null}`, `{"id":{}}`, "\r\n{\"id\":1}\r\n",
		"  \t{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", " x\n \t[1]\n",
	} {
		f.Add(seed)
	}
	// read is what r hands the request of id 1 and the failures it reports.
	read := func(t *testing.T, in string, max int64) (string, []*wirecheck.ProtocolError) {
		var failures []*wirecheck.ProtocolError
		fail := func(e *wirecheck.ProtocolError) { failures = append(failures, e) }
		r := NewRPC(nopWriteCloser{io.Discard}, wirecheck.NewLineGuard(strings.NewReader(in), max, fail), fail, nil)
		answers := make(chan *transport.JSONRPCResponse, 1)
		r.waiting[mcp.NewRequestId(int64(1)).String()] = answers
		r.SetNotificationHandler(func(mcp.JSONRPCNotification) {})
		r.read()
		select {
		case a := <-answers:
			if a.Result != nil && !json.Valid(a.Result) {
				t.Fatalf("handed on result %q", a.Result)
			}
			return fmt.Sprintf("%s %+v", a.Result, a.Error), failures
		default:
			return "", failures
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		answer, failures := read(t, in, 512)
		// The limit grows by the two bytes each line gains (and so does
		// its message).
		spaced, spacedFailures := read(t, " \t"+strings.ReplaceAll(in, "\n", "\n \t"), 512+2)
		if spaced != answer || strings.ReplaceAll(fmt.Sprint(spacedFailures), "514 bytes", "512 bytes") != fmt.Sprint(failures) {
			t.Fatalf("leading whitespace: answer %q, failures %v; without it %q, %v", spaced, spacedFailures, answer, failures)
		}
		for _, e := range failures {
			if !errors.Is(e, wirecheck.ErrProtocol) {
				t.Fatalf("%v", e)
			}
		}
		if len(failures) > 0 && !strings.Contains(in, "\n") {
			t.Fatalf("an unterminated line was reported: %v", failures)
		}
		if len(failures) > bytes.Count([]byte(in), []byte("\n")) {
			t.Fatalf("%d failures for %d lines", len(failures), bytes.Count([]byte(in), []byte("\n")))
		}
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// BenchmarkStdioAnswer: one request and its answer (a tools/call result of
// about 1 KB) over pipes, through RPC and through mcp-go's own stdio
// transport over the same pipes; the server side (the same for both) only
// echoes a prepared answer with the request's id.
func BenchmarkStdioAnswer(b *testing.B) {
	result := `{"content":[{"type":"text","text":"` + strings.Repeat("order 12345 shipped; ", 40) + `"}],"structuredContent":{"order":{"id":"12345","status":"shipped","items":[1,2,3]}}}`
	for _, tc := range []struct {
		name string
		make func(in io.WriteCloser, out io.Reader) transport.Interface
	}{
		{"mcp-go", func(in io.WriteCloser, out io.Reader) transport.Interface { return transport.NewIO(out, in, nil) }},
		{"RPC", func(in io.WriteCloser, out io.Reader) transport.Interface {
			return NewRPC(in, wirecheck.NewLineGuard(out, 1<<20, func(*wirecheck.ProtocolError) {}), func(*wirecheck.ProtocolError) {}, nil)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			outR, outW := io.Pipe()
			inR, inW := io.Pipe()
			tr := tc.make(inW, outR)
			if err := tr.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			go echoAnswers(inR, outW, result)
			defer func() { _ = outW.Close(); _ = inR.Close(); _ = tr.Close() }()
			params := map[string]json.RawMessage{"name": json.RawMessage(`"lookup_order"`), "arguments": json.RawMessage(`{"order_id":"12345"}`)}
			b.ReportAllocs()
			for i := int64(1); b.Loop(); i++ {
				resp, err := tr.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(i), Method: "tools/call", Params: params})
				if err != nil || len(resp.Result) != len(result) {
					b.Fatalf("%v, %d bytes", err, len(resp.Result))
				}
			}
		})
	}
}

// echoAnswers answers every request line read from in with result, under
// the request's id, until in ends.
func echoAnswers(in io.Reader, out io.Writer, result string) {
	r := bufio.NewReader(in)
	var line []byte
	for {
		req, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(req, &m) != nil {
			return
		}
		line = append(append(append(append(line[:0], `{"jsonrpc":"2.0","id":`...), m.ID...), `,"result":`...), result...)
		line = append(line, "}\n"...)
		if _, err := out.Write(line); err != nil {
			return
		}
	}
}

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
