package httpguard

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestEventGuard(t *testing.T) {
	stream := "event: endpoint\ndata: /messages?session=1\n\n" + // not JSON, not a message
		": comment\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\n\n" +
		"data: garbage sk-secret\r\n\r\n" +
		"event: message\ndata: " + nested(20000) + "\n\n" +
		"data: [1]\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	var failures []string
	g := &eventGuard{body: io.NopCloser(strings.NewReader(stream)), max: 1 << 20, fail: func(err *wirecheck.ProtocolError) {
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
	g = &eventGuard{body: io.NopCloser(strings.NewReader("data: {}\n\n" + big)), max: 1024, fail: func(err *wirecheck.ProtocolError) {
		failures = append(failures, err.Error())
	}}
	_, err = io.ReadAll(g)
	if !errors.Is(err, wirecheck.ErrProtocol) || len(failures) != 1 || !strings.Contains(failures[0], "larger than 1 KiB") {
		t.Fatalf("err %v, failures %q; want one too-large failure", err, failures)
	}
}

func FuzzEventGuard(f *testing.F) {
	for _, seed := range []string{"data: {}\n\n", "data: x\r\n\r\n", "event: endpoint\ndata: /x\n\n", "data: {\ndata: }\n\n", "\n\n\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		g := &eventGuard{body: io.NopCloser(strings.NewReader(in)), max: 128, fail: func(*wirecheck.ProtocolError) {}}
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
		if !errors.Is(err, wirecheck.ErrProtocol) || len(out) > 1024 {
			t.Errorf("%d bytes: read %d, %v; want at most 1024 and a protocol error", size, len(out), err)
		}
	}
}
