package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/syncbuf"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestMalformedLists(t *testing.T) {
	cases := []struct {
		name      string
		opts      func(*Options)
		page      int // which tools/list page to fetch raw (1-based)
		check     func(t *testing.T, body []byte)
		mcpGoFail bool // mcp-go's ListTools must fail on it
	}{
		{"tools not an array", func(o *Options) { o.MalformedList = true }, 1, func(t *testing.T, body []byte) {
			if !bytes.Contains(body, []byte(`"tools":{"not":"an array"}`)) {
				t.Errorf("body %s", body)
			}
		}, true},
		{"entry not an object", func(o *Options) { o.PageSize = 3; o.MalformedPage = 2 }, 2, func(t *testing.T, body []byte) {
			if !bytes.Contains(body, []byte(`"tools":["not-a-tool",`)) {
				t.Errorf("body %s", body)
			}
		}, true},
		{"tool without a name", func(o *Options) { o.MalformedPage = 1; o.MalformedKind = MalformedNoName }, 1, func(t *testing.T, body []byte) {
			tools := decodeTools(t, body)
			if _, ok := tools[0]["name"]; ok || len(tools) != len(toolsWithoutExtension) {
				t.Errorf("first tool %s", tools[0])
			}
		}, false},
		{"inputSchema a string", func(o *Options) { o.MalformedPage = 1; o.MalformedKind = MalformedSchemaString }, 1, func(t *testing.T, body []byte) {
			if string(decodeTools(t, body)[0]["inputSchema"]) != `"object"` {
				t.Errorf("body %s", body)
			}
		}, false},
		{"garbage body", func(o *Options) { o.MalformedPage = 1; o.MalformedKind = MalformedGarbage }, 1, func(t *testing.T, body []byte) {
			if json.Valid(body) {
				t.Errorf("body is valid JSON: %s", body)
			}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			tc.opts(&opts)
			url, _ := StartHTTP(t, opts)
			ctx := ctxTimeout(t, 5*time.Second)
			var cursor string
			var body []byte
			for range tc.page {
				params := map[string]any{"_meta": ModernMeta()}
				if cursor != "" {
					params["cursor"] = cursor
				}
				res, err := PostMessage(ctx, url, nil, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
				if err != nil {
					t.Fatal(err)
				}
				body = res.Body
				var resp struct {
					Result struct {
						NextCursor string `json:"nextCursor"`
					} `json:"result"`
				}
				_ = json.Unmarshal(body, &resp)
				cursor = resp.Result.NextCursor
			}
			tc.check(t, body)

			c, _ := mcpClient(t, "http", nil, url, false, nil)
			_, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if tc.mcpGoFail && err == nil {
				t.Error("mcp-go accepted the malformed list")
			}
		})
	}
}

func decodeTools(t *testing.T, body []byte) []map[string]json.RawMessage {
	t.Helper()
	var resp struct {
		Result struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Result.Tools) == 0 {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return resp.Result.Tools
}

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer

func TestStderrNoiseCarriesNoValues(t *testing.T) {
	var stderr syncBuffer
	opts := testOptions(t)
	opts.StderrNoise = true
	opts.Stderr = &stderr
	peer, _ := newRPC(t, "stdio", true, []string{SecureParamsExtension}, opts)
	peer.call("tools/call", map[string]any{"name": "execute_sql", "arguments": map[string]any{"query": "q"},
		"secureArguments": map[string]any{"project_id": canaryProject, "instance": canaryInstance}})
	out := stderr.String()
	if strings.Count(out, "\n") < 2 || !strings.Contains(out, "tools/call") {
		t.Errorf("stderr noise %q", out)
	}
	if strings.Contains(out, "canary-") {
		t.Errorf("stderr leaks a secure value: %q", out)
	}
}

func TestStartDelayHonoursContext(t *testing.T) {
	opts := testOptions(t)
	opts.StartDelay = time.Hour
	srv := newServer(t, opts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.ServeStdio(ctx, strings.NewReader(""), io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("ServeStdio during start delay: %v", err)
	}
	if err := srv.ListenAndServe(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ListenAndServe during start delay: %v", err)
	}
}

func TestStdioFraming(t *testing.T) {
	srv := newServer(t, testOptions(t))
	raw := newRawStdio(t, srv)
	if _, err := raw.pipes.in.Write([]byte("not json\n[1,2]\n{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a single JSON-RPC object"}}`,
		`{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: jsonrpc must be \"2.0\""}}`,
	} {
		if got := string(raw.next()); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	}
	invalid := srv.Recording().Messages("")
	if len(invalid) != 3 || !invalid[0].Invalid || string(invalid[0].Message) != `"not json"` {
		t.Errorf("recorded %+v", invalid)
	}
}

func TestRecordFileWithSent(t *testing.T) {
	opts := testOptions(t)
	opts.RecordFile = filepath.Join(t.TempDir(), "record.jsonl")
	opts.RecordSent = true
	peer, srv := newRPC(t, "stdio", false, nil, opts) // legacy: initialize, then tools/list
	peer.call("tools/list", nil)
	_ = srv.Close()
	data, err := os.ReadFile(opts.RecordFile)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var e Recorded
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, e.Dir)
	}
	if strings.Join(dirs, ",") != "in,out,in,out" {
		t.Errorf("directions %v, want initialize and tools/list each received then answered\n%s", dirs, data)
	}
}

func TestRecordFile(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(t)
	opts.RecordFile = filepath.Join(dir, "record.jsonl")
	url, srv := StartHTTP(t, opts)
	c, _ := mcpClient(t, "http", nil, url, false, []string{SecureParamsExtension})
	if _, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(opts.RecordFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(srv.Recording().Messages("")) || len(lines) < 2 {
		t.Fatalf("%d lines, %d received messages", len(lines), len(srv.Recording().Messages("")))
	}
	for _, line := range lines {
		var e struct {
			TS        time.Time         `json:"ts"`
			Dir       string            `json:"dir"`
			Transport string            `json:"transport"`
			Headers   map[string]string `json:"headers"`
			Message   map[string]any    `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.TS.IsZero() || e.Dir != DirIn || e.Transport != "http" || e.Headers["Content-Type"] != "application/json" || e.Message["jsonrpc"] != "2.0" {
			t.Errorf("line %s", line)
		}
	}
}
