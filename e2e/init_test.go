package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPolicyInitWrite runs `policy init --write` on a config of the npm
// filesystem and memory servers with no approvals section: afterwards a
// read runs without asking (even with --approve deny), a write asks (so
// --approve deny denies it, exit 3), the file keeps its comments, and a
// second run adds nothing.
func TestPolicyInitWrite(t *testing.T) {
	t.Parallel()
	node, fsScript := ftPeer(t, "server-filesystem")
	_, memScript := ftPeer(t, "server-memory")
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "notes.txt", []byte("hello\n"))
	dir := t.TempDir()
	original := "# first run config\n" +
		"mcpServers:\n" +
		"  fs: # the filesystem\n" +
		"    command: " + strconv.Quote(node) + "\n" +
		"    args: [" + strconv.Quote(fsScript) + ", " + strconv.Quote(root) + "]\n" +
		"  mem:\n" +
		"    command: " + strconv.Quote(node) + "\n" +
		"    args: [" + strconv.Quote(memScript) + "]\n" +
		"    env: {MEMORY_FILE_PATH: " + strconv.Quote(filepath.Join(dir, "memory.jsonl")) + "}\n" +
		"audit:\n" +
		"  path: " + strconv.Quote(filepath.Join(dir, "audit.jsonl")) + " # keep me\n"
	cfg := writeFile(t, dir, "agenthost.yaml", []byte(original))
	list := mustJSON(obj{"path": root})
	write := mustJSON(obj{"path": filepath.Join(root, "written.txt"), "content": "x"})

	// Before: nobody classified the read, so it asks and is denied.
	r := run(t, nil, "--config", cfg, "call", "fs", "list_directory", "--args", list, "--approve", "deny", "--json")
	wantCallError(t, r, 3, "denied")

	r = run(t, nil, "--config", cfg, "policy", "init", "--write")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "catalogue entries added, 3 default rules added") {
		t.Errorf("--write did not say what it added\n%s", r)
	}
	written, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(written, []byte(original)) {
		t.Errorf("the original config is not kept byte for byte\n%s", written)
	}
	for _, want := range []string{"server: fs", "tool: list_directory", "tool: write_file", "server: mem", "tool: delete_entities", "id: init-writes"} {
		if !bytes.Contains(written, []byte(want)) {
			t.Errorf("the written config lacks %q\n%s", want, written)
		}
	}
	if n := bytes.Count(written, []byte("\napprovals:")); n != 1 {
		t.Errorf("%d approvals blocks, want 1\n%s", n, written)
	}
	// directory_tree has no known verb; its readOnlyHint makes the
	// suggestion a read, marked for review.
	if !bytes.Contains(written, []byte("# from the server's hints: review: no known verb in the tool name; server hints readOnlyHint=true")) {
		t.Errorf("directory_tree is not suggested from its hints, marked for review\n%s", written)
	}

	// A read runs without asking.
	r = run(t, nil, "--config", cfg, "call", "fs", "list_directory", "--args", list, "--approve", "deny", "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "notes.txt") {
		t.Errorf("list_directory did not list the directory\n%s", r)
	}
	// A write asks: policy explain says so (exit 10), and --approve deny
	// denies it.
	r = run(t, nil, "--config", cfg, "policy", "explain", "fs", "write_file")
	wantCode(t, r, 10)
	r = run(t, nil, "--config", cfg, "call", "fs", "write_file", "--args", write, "--approve", "deny", "--json")
	msg := wantCallError(t, r, 3, "denied")
	if !strings.Contains(msg, "init-writes") {
		t.Errorf("write_file was not denied because it asked (rule init-writes): %s", msg)
	}
	if _, err := os.Stat(filepath.Join(root, "written.txt")); err == nil {
		t.Error("a denied write_file wrote the file")
	}
	r = run(t, nil, "--config", cfg, "call", "mem", "read_graph", "--args", "{}", "--approve", "deny", "--json")
	wantCode(t, r, 0)
	r = run(t, nil, "--config", cfg, "call", "fs", "directory_tree", "--args", list, "--approve", "deny", "--json")
	wantCode(t, r, 0)

	// Idempotent: a second run adds nothing and leaves the file alone.
	r = run(t, nil, "--config", cfg, "policy", "init", "--write")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "nothing to add") {
		t.Errorf("second run: %s", r)
	}
	again, err := os.ReadFile(cfg)
	if err != nil || !bytes.Equal(again, written) {
		t.Errorf("the second run changed the file (%v)", err)
	}

	// Without --write: nothing to propose, so no empty block on stdout,
	// and the reason on stderr.
	r = run(t, nil, "--config", cfg, "policy", "init")
	wantCode(t, r, 0)
	if r.stdout != "" || !strings.Contains(r.stderr, "nothing to add (") {
		t.Errorf("policy init on a catalogued config\n%s", r)
	}
}

// TestPolicyInitRefusesJSON: --write edits YAML only and says so.
func TestPolicyInitRefusesTOML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "agenthost.toml", []byte("[mcpServers]\n"))
	before, _ := os.ReadFile(cfg)
	r := run(t, nil, "--config", cfg, "policy", "init", "--write")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "YAML and JSON configuration files only") {
		t.Errorf("no clear refusal\n%s", r)
	}
	after, _ := os.ReadFile(cfg)
	if !bytes.Equal(before, after) {
		t.Error("the TOML config changed")
	}
}
