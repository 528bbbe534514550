package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plainTools are four valid tools; with --page-size 2 they span two pages.
func plainTools(t *testing.T) string {
	var tools []obj
	for _, name := range []string{"alpha", "bravo", "charlie", "delta"} {
		tools = append(tools, obj{"name": name, "inputSchema": obj{"type": "object", "properties": obj{"q": obj{"type": "string"}}}})
	}
	return writeJSON(t, t.TempDir(), "tools.json", tools)
}

// TestHostileServers: broken or slow servers get a clear error or lose only
// their bad tool, and never hold up or break the other servers.
func TestHostileServers(t *testing.T) {
	t.Parallel()
	tools := plainTools(t)
	dir := t.TempDir()
	record := func(name string) string { return filepath.Join(dir, name+".jsonl") }
	paged := func(kind string) []string {
		return []string{"--page-size", "2", "--malformed-page", "2", "--malformed-kind", kind}
	}
	garbageHTTP := startHTTPServer(t, tools, paged("garbage")...)
	servers := obj{
		"good":           stdioServer(tools, record("good")),
		"malformed_list": stdioServer(tools, record("malformed_list"), "--malformed-list"),
		"not_object":     stdioServer(tools, "", paged("not-object")...),
		"no_name":        stdioServer(tools, "", paged("no-name")...),
		"schema_string":  stdioServer(tools, "", paged("schema-string")...),
		"garbage_stdio":  stdioServer(tools, "", paged("garbage")...),
		"garbage_http":   obj{"url": garbageHTTP.url},
		"slow":           stdioServer(tools, record("slow"), "--start-delay", "10s"),
	}
	// A garbage line on stdio fails the request it may have answered at
	// once (it used to be dropped, and connect waited for its timeout).
	servers["slow"].(obj)["connectTimeout"] = "1s"
	cfg := writeConfig(t, obj{"mcpServers": servers})

	healthy := map[string]bool{"good": true, "not_object": true, "no_name": true, "schema_string": true}
	broken := []string{"malformed_list", "garbage_stdio", "garbage_http", "slow"}

	r := run(t, nil, "--config", cfg, "servers", "--json")
	wantCode(t, r, 6) // servers is a health check: some are unavailable
	if r.elapsed > 6*time.Second {
		t.Errorf("servers took %s: a broken server held up the others", r.elapsed)
	}
	doc := decodeStdout[serversDoc](t, r)
	for name := range healthy {
		if s := doc.server(t, name); s.Status != "connected" {
			t.Errorf("%s: status %q (%v), want connected", name, s.Status, s.Error)
		}
	}
	for _, name := range broken {
		s := doc.server(t, name)
		if s.Status != "error" || s.Error == nil || strings.TrimSpace(*s.Error) == "" {
			t.Errorf("%s: status %q error %v, want an error with a message", name, s.Status, s.Error)
		}
	}

	// The catalog of every server that answered is printed, and the exit
	// is 6, as for `servers`: some did not.
	r = run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 6)
	report := decodeStdout[toolsDoc](t, r)
	for name := range healthy {
		s := report.server(t, name)
		active, excluded := 0, 0
		for _, tl := range s.Tools {
			switch tl.Status {
			case "active":
				active++
			case "excluded":
				excluded++
				if reasonOf(tl) == "" {
					t.Errorf("%s: tool %q excluded without a reason", name, tl.Name)
				}
			}
		}
		wantActive, wantExcluded := 3, 1 // the corrupted first tool of page 2
		if name == "good" {
			wantActive, wantExcluded = 4, 0
		}
		if active != wantActive || excluded != wantExcluded {
			t.Errorf("%s: %d active and %d excluded tools, want %d and %d: %+v", name, active, excluded, wantActive, wantExcluded, s.Tools)
		}
		for _, tool := range []string{"alpha", "bravo", "delta"} {
			if tl := s.tool(t, tool); tl.Status != "active" {
				t.Errorf("%s: valid tool %s is %s", name, tool, tl.Status)
			}
		}
	}
	for _, name := range broken {
		if s := report.server(t, name); s.Status != "error" || len(s.Tools) != 0 {
			t.Errorf("%s: status %q with %d tools, want an error and no tools", name, s.Status, len(s.Tools))
		}
	}

	// Asking about one server starts only that one.
	for _, name := range []string{"malformed_list", "slow"} {
		if err := os.Remove(record(name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	r = run(t, nil, "--config", cfg, "tools", "--server", "good", "--json")
	wantCode(t, r, 0)
	if got := decodeStdout[toolsDoc](t, r); len(got.Servers) != 1 || got.Servers[0].Status != "connected" {
		t.Errorf("tools --server good: %+v", got.Servers)
	}
	for _, name := range []string{"malformed_list", "slow"} {
		if _, err := os.Stat(record(name)); err == nil {
			t.Errorf("tools --server good also started %s", name)
		}
	}
	wantCode(t, run(t, nil, "--config", cfg, "call", "good", "alpha", "--args", `{"q":"x"}`), 0)

	// Asking about a server that fails is exit 6, with and without --json.
	for _, args := range [][]string{{"tools", "--server", "malformed_list", "--json"}, {"tools", "--server", "malformed_list"}} {
		r = run(t, nil, append([]string{"--config", cfg}, args...)...)
		wantCode(t, r, 6)
		if !strings.Contains(r.stdout, "malformed_list") {
			t.Errorf("%v: the failed server is not reported\n%s", args, r)
		}
	}
}

// nested returns an object schema nested depth levels deep.
func nested(depth int) obj {
	schema := obj{"type": "string"}
	for range depth {
		schema = obj{"type": "object", "properties": obj{"n": schema}}
	}
	return schema
}

// TestHostileSchemas: tool definitions built to make a host loop, recurse
// or pick the wrong tool are excluded with a reason; the rest keep working.
func TestHostileSchemas(t *testing.T) {
	t.Parallel()
	secure := secureSchema([]string{"tenant_id"}, "tenant_id")
	node := obj{"type": "object", "properties": obj{"child": obj{"$ref": "#/$defs/node"}, "label": obj{"type": "string"}}}
	nodeWithSecret := obj{"type": "object", "properties": obj{"child": obj{"$ref": "#/$defs/node"}, "tenant_id": obj{"type": "string"}}}
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "good", "inputSchema": sqlInput, "secureInputSchema": secure},
		// Legitimate recursion (a tree) is fine.
		{"name": "tree", "inputSchema": obj{"type": "object", "$defs": obj{"node": node}, "properties": obj{"root": obj{"$ref": "#/$defs/node"}}},
			"secureInputSchema": secure},
		// The secure name is reachable only through the cycle.
		{"name": "cycle_overlap", "inputSchema": obj{"type": "object", "$defs": obj{"node": nodeWithSecret}, "properties": obj{"root": obj{"$ref": "#/$defs/node"}}},
			"secureInputSchema": secure},
		{"name": "deep", "inputSchema": nested(200), "secureInputSchema": secure},
		{"name": "twin", "inputSchema": obj{"type": "object"}},
		{"name": "twin", "inputSchema": obj{"type": "object", "properties": obj{"x": obj{"type": "string"}}}},
	})
	entry, record := serverFor(t, "stdio", tools, "")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"srv": entry},
		"bindings":   []obj{{"server": "srv", "params": values(map[string]any{"tenant_id": "acme"})}},
	})

	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[toolsDoc](t, r).server(t, "srv")
	if s.Status != "connected" {
		t.Fatalf("status %q, want connected\n%s", s.Status, r)
	}
	for _, name := range []string{"good", "tree"} {
		if tl := s.tool(t, name); tl.Status != "active" {
			t.Errorf("%s: status %q (%s), want active", name, tl.Status, reasonOf(tl))
		}
	}
	for _, name := range []string{"cycle_overlap", "deep"} {
		tl := s.tool(t, name)
		if tl.Status != "excluded" || reasonOf(tl) == "" {
			t.Errorf("%s: status %q reason %q, want excluded with a reason", name, tl.Status, reasonOf(tl))
		}
	}
	twins := s.tools()["twin"]
	if len(twins) != 2 {
		t.Fatalf("want both twin definitions reported, got %d", len(twins))
	}
	for _, tl := range twins {
		if tl.Status != "excluded" || !strings.Contains(reasonOf(tl), "twin") {
			t.Errorf("twin: status %q reason %q, want excluded, naming the duplicate", tl.Status, reasonOf(tl))
		}
	}

	wantCode(t, run(t, nil, "--config", cfg, "call", "srv", "good", "--args", `{"query":"q"}`), 0)
	for _, name := range []string{"twin", "deep", "cycle_overlap"} {
		wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", name, "--json"), 6, "unavailable")
	}
	if n := len(withMethod(readRecord(t, record), "tools/call")); n != 1 {
		t.Errorf("%d tools/call recorded, want only the good one", n)
	}
}

// TestRefLoopSchemaExcluded: an inputSchema whose $ref chain loops without
// ever reaching a schema (a -> b -> a) is undefined in JSON Schema and no
// argument can validate against it ("reference cycle"); the host must
// exclude the tool with a reason rather than offer it to the model.
func TestRefLoopSchemaExcluded(t *testing.T) {
	t.Parallel()
	loop := obj{"$ref": "#/$defs/a", "$defs": obj{"a": obj{"$ref": "#/$defs/b"}, "b": obj{"$ref": "#/$defs/a"}}}
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "ref_loop", "inputSchema": loop, "secureInputSchema": secureSchema([]string{"tenant_id"}, "tenant_id")},
		{"name": "ref_loop_plain", "inputSchema": loop},
		{"name": "good", "inputSchema": sqlInput},
	})
	entry, record := serverFor(t, "stdio", tools, "")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"srv": entry},
		"bindings":   []obj{{"server": "srv", "params": values(map[string]any{"tenant_id": "acme"})}},
	})
	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[toolsDoc](t, r).server(t, "srv")
	if tl := s.tool(t, "good"); tl.Status != "active" {
		t.Errorf("good: status %q (%s), want active", tl.Status, reasonOf(tl))
	}
	for _, name := range []string{"ref_loop", "ref_loop_plain"} {
		if tl := s.tool(t, name); tl.Status != "excluded" || reasonOf(tl) == "" {
			t.Errorf("%s: status %q reason %q, want excluded with a reason", name, tl.Status, reasonOf(tl))
		}
	}
	for _, name := range []string{"ref_loop", "ref_loop_plain"} {
		wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", name, "--json"), 6, "unavailable")
	}
	if n := len(withMethod(readRecord(t, record), "tools/call")); n != 0 {
		t.Errorf("%d tools/call recorded for tools that should be excluded", n)
	}
}

// TestServerDiesMidCall: a server that dies while answering gives exit 6
// with a clear message; over stdio the next process starts it afresh.
func TestServerDiesMidCall(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
				{"name": "crash", "inputSchema": obj{"type": "object"}, "x-test": obj{"die": true}},
				{"name": "echo", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "still here"}},
			})
			var entry obj
			var server *httpServer
			if transport == "stdio" {
				entry = stdioServer(tools, "")
			} else {
				server = startHTTPServer(t, tools)
				entry = obj{"url": server.url}
			}
			cfg := writeConfig(t, obj{"mcpServers": obj{"srv": entry}})

			r := run(t, nil, "--config", cfg, "call", "srv", "crash", "--json")
			msg := wantCallError(t, r, 6, "unavailable")
			if !strings.Contains(msg, "crash") {
				t.Errorf("the message does not name the tool: %q", msg)
			}
			if r.elapsed > 10*time.Second {
				t.Errorf("a dead server took %s to notice", r.elapsed)
			}

			if transport == "stdio" {
				// A new process starts the server again.
				r = run(t, nil, "--config", cfg, "call", "srv", "echo", "--json")
				wantCode(t, r, 0)
				if text := decodeStdout[callDoc](t, r).text(); !strings.Contains(text, "still here") {
					t.Errorf("unexpected result after the crash\n%s", r)
				}
				return
			}
			server.waitExit(t, 5*time.Second)
			wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "echo", "--json"), 6, "unavailable")
		})
	}
}

// TestHangingToolTimesOut: callTimeout bounds a call to a tool that never
// answers.
func TestHangingToolTimesOut(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
				{"name": "hang", "inputSchema": obj{"type": "object"}, "x-test": obj{"hang": true}},
			})
			entry, _ := serverFor(t, transport, tools, "")
			entry["callTimeout"] = "1s"
			cfg := writeConfig(t, obj{"mcpServers": obj{"srv": entry}})
			r := run(t, nil, "--config", cfg, "call", "srv", "hang", "--json")
			msg := wantCallError(t, r, 6, "unavailable")
			if !strings.Contains(msg, "1s") {
				t.Errorf("the message does not give the timeout: %q", msg)
			}
			if r.elapsed > 5*time.Second {
				t.Errorf("a 1s callTimeout took %s", r.elapsed)
			}
		})
	}
}
