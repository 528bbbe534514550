package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ftPeer returns node and the entry point of an npm peer installed by
// `make peers`; the test fails (never skips) when it is missing.
func ftPeer(t *testing.T, pkg string) (node, script string) {
	t.Helper()
	script = filepath.Join(moduleRoot, "e2e", "peers", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the npm peer @modelcontextprotocol/%s is not installed (%v): run `make peers`", pkg, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): install Node.js 20+ and run `make peers`", err)
	}
	return node, script
}

// TestFtPeerFilesystem runs @modelcontextprotocol/server-filesystem over
// stdio on a temporary directory: under inferred risk metadata reads are
// allowed; writes (catalogued as mutations) are asked, so a denied ask
// writes nothing and an approved one writes the file.
func TestFtPeerFilesystem(t *testing.T) {
	t.Parallel()
	node, script := ftPeer(t, "server-filesystem")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	existing := writeFile(t, root, "notes.txt", []byte("filesystem peer says hello\n"))
	target := filepath.Join(root, "written.txt")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"fs": obj{"command": node, "args": []string{script, root}}},
		"approvals": obj{
			"unclassified": "infer",
			"catalogue": []obj{{"server": "fs", "tool": "write_file", "metadata": obj{
				"category": "mutate", "riskLevel": "medium", "blastRadius": "item", "reversibility": "manual",
				"approvalRecommendation": "single", "minTrustLevel": 1,
			}}},
			"rules": []obj{
				{"id": "reads", "when": obj{"category": []string{"read", "observe"}}, "decide": "allow"},
				{"id": "writes", "when": obj{"category": []string{"mutate"}}, "decide": "ask", "approvers": 1},
			},
			"noMatch": "deny",
		},
	})

	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	fs := decodeStdout[toolsDoc](t, r).server(t, "fs")
	if fs.Status != "connected" {
		t.Fatalf("server-filesystem: status %q, want connected\n%s", fs.Status, r)
	}
	read := "read_text_file"
	if len(fs.tools()[read]) == 0 {
		read = "read_file" // older releases
	}
	if tl := fs.tool(t, read); tl.Status != "active" {
		t.Errorf("%s: status %q (%s), want active", read, tl.Status, reasonOf(tl))
	}
	if tl := fs.tool(t, "write_file"); tl.Status != "active" {
		t.Errorf("write_file: status %q (%s), want active (asked, not hidden)", tl.Status, reasonOf(tl))
	}

	r = run(t, nil, "--config", cfg, "call", "fs", read, "--args", mustJSON(obj{"path": existing}), "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "filesystem peer says hello") {
		t.Errorf("%s did not return the file's content\n%s", read, r)
	}

	write := mustJSON(obj{"path": target, "content": "written through agenthost"})
	r = run(t, nil, "--config", cfg, "call", "fs", "write_file", "--args", write, "--approve", "deny", "--json")
	wantCallError(t, r, 3, "denied")
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a denied write_file wrote the file")
	}

	r = run(t, nil, "--config", cfg, "call", "fs", "write_file", "--args", write, "--approve", "auto", "--json")
	wantCode(t, r, 0)
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "written through agenthost" {
		t.Fatalf("an approved write_file did not write the file (content %q, %v)\n%s", got, err, r)
	}

	// Outside the allowed directory the server itself refuses: a tool error.
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("content-beyond-the-root"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "--config", cfg, "call", "fs", read, "--args", mustJSON(obj{"path": outside}), "--json")
	wantCode(t, r, 5)
	if strings.Contains(r.stdout+r.stderr, "content-beyond-the-root") {
		t.Errorf("a file outside the allowed directory was read\n%s", r)
	}
}

// TestFtPeerMemory runs @modelcontextprotocol/server-memory over stdio:
// entities created by one call are in the graph the next call reads.
func TestFtPeerMemory(t *testing.T) {
	t.Parallel()
	node, script := ftPeer(t, "server-memory")
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	cfg := writeConfig(t, obj{"mcpServers": obj{"memory": obj{
		"command": node, "args": []string{script}, "env": obj{"MEMORY_FILE_PATH": memory},
	}}})

	create := mustJSON(obj{"entities": []obj{{
		"name": "Ada Lovelace", "entityType": "person", "observations": []string{"wrote the first published program"},
	}}})
	r := run(t, nil, "--config", cfg, "call", "memory", "create_entities", "--args", create, "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError {
		t.Fatalf("create_entities failed\n%s", r)
	}

	r = run(t, nil, "--config", cfg, "call", "memory", "read_graph", "--json")
	wantCode(t, r, 0)
	text := decodeStdout[callDoc](t, r).text()
	for _, want := range []string{"Ada Lovelace", "person", "wrote the first published program"} {
		if !strings.Contains(text, want) {
			t.Errorf("read_graph lacks %q: %s", want, text)
		}
	}
	if data, err := os.ReadFile(memory); err != nil || !strings.Contains(string(data), "Ada Lovelace") {
		t.Errorf("the memory file does not hold the entity (%v): %s", err, data)
	}
}

// TestFtPeerEverythingHTTP runs @modelcontextprotocol/server-everything over
// streamable HTTP (its stdio transport is covered by TestServerEverything):
// it connects and its echo tool round-trips.
func TestFtPeerEverythingHTTP(t *testing.T) {
	t.Parallel()
	addr := startEverything(t, "streamableHttp")
	cfg := writeConfig(t, obj{"mcpServers": obj{"everything": obj{"url": fmt.Sprintf("http://%s/mcp", addr)}}})

	r := run(t, nil, "--config", cfg, "servers", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[serversDoc](t, r).server(t, "everything")
	if s.Status != "connected" || s.Tools == 0 {
		t.Fatalf("server-everything over HTTP: status %q with %d tools, want connected with tools\n%s", s.Status, s.Tools, r)
	}

	r = run(t, nil, "--config", cfg, "call", "everything", "echo", "--args", `{"message":"over streamable http"}`, "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "over streamable http") {
		t.Errorf("echo over HTTP did not echo\n%s", r)
	}
}

// startEverything runs server-everything on a free loopback port with the
// given transport (streamableHttp or sse) for the rest of the test and
// returns its address once it listens.
func startEverything(t *testing.T, transport string) string {
	t.Helper()
	node, script := ftPeer(t, "server-everything")
	port := ftFreePort(t)
	cmd := exec.Command(node, script, transport)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	p := spawn(t, "server-everything", cmd, false)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, 20*time.Second, "server-everything to listen on "+addr, func() bool {
		select {
		case <-p.done:
			t.Fatalf("server-everything exited: %s", output.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		_ = c.Close()
		return true
	})
	return addr
}
