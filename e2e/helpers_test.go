package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/syncbuf"

	"go.yaml.in/yaml/v3"
)

// Built once by TestMain.
var (
	moduleRoot    string // the repository root (the parent of e2e/)
	agenthostBin  string // ./cmd/agenthost
	testServerBin string // ./cmd/agenthost-testserver
	confClientBin string // ./e2e/cmd/confclient
)

// The SEP-3221 extension id and the _meta keys of the 2026-07-28 era.
const (
	secureExt        = "io.modelcontextprotocol/secure-params"
	metaCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaProtocol     = "io.modelcontextprotocol/protocolVersion"

	legacyVersion = "2025-11-25"
	modernVersion = "2026-07-28"
)

// defaultRunTimeout bounds one agenthost run; a run that needs longer is a
// hang, and the test fails with what the process printed so far.
const defaultRunTimeout = 30 * time.Second

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "go.mod"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: cannot find the module root (the parent of e2e/):", err)
		return 1
	}
	moduleRoot = root
	bin, err := os.MkdirTemp("", "agenthost-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(bin)
	if err := buildBinaries(root, bin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	agenthostBin = filepath.Join(bin, exe("agenthost"))
	testServerBin = filepath.Join(bin, exe("agenthost-testserver"))
	confClientBin = filepath.Join(bin, exe("confclient"))
	return m.Run()
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// goCommand is the go tool that builds the binaries under test.
func goCommand() string {
	if path, err := exec.LookPath("go"); err == nil {
		return path
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", exe("go"))
	}
	return "go"
}

func buildBinaries(root, out string) error {
	goTool := goCommand()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out+string(filepath.Separator), "./cmd/agenthost", "./cmd/agenthost/agenthost-full", "./cmd/agenthost/agenthost-supervise", "./cmd/agenthost-testserver", "./e2e/cmd/confclient")
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/agenthost ./cmd/agenthost/agenthost-full ./cmd/agenthost/agenthost-supervise ./cmd/agenthost-testserver ./e2e/cmd/confclient: %w\n%s", err, output)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Running agenthost

// result is one finished agenthost run.
type result struct {
	args    []string
	stdout  string
	stderr  string
	code    int
	elapsed time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("agenthost %s\nexit code %d after %s\n--- stdout ---\n%s\n--- stderr ---\n%s",
		strings.Join(r.args, " "), r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// run runs agenthost with args and extra environment variables (NAME=VALUE)
// in a fresh working directory, and returns when it exits.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runWithTimeout(t, defaultRunTimeout, env, args...)
}

func runWithTimeout(t *testing.T, timeout time.Duration, env []string, args ...string) result {
	t.Helper()
	return runWithStdin(t, timeout, nil, env, args...)
}

// runWithStdin is runWithTimeout with stdin (nil: none).
func runWithStdin(t *testing.T, timeout time.Duration, stdin io.Reader, env []string, args ...string) result {
	t.Helper()
	return runProgram(t, agenthostBin, timeout, stdin, env, args...)
}

// runProgram is runWithStdin of the executable bin (an agenthost build).
func runProgram(t *testing.T, bin string, timeout time.Duration, stdin io.Reader, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(baseEnv(t), env...)
	cmd.Stdin = stdin // not a terminal: asks are denied unless --approve says otherwise
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	inOwnProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Start()
	if err != nil {
		t.Fatalf("starting agenthost: %v", err)
	}
	err = cmd.Wait()
	res := result{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	// Whatever the binary left behind in its group (a server that ignored
	// EOF) dies now, before the next test starts.
	_ = killProcessGroup(cmd)
	if ctx.Err() != nil {
		t.Fatalf("agenthost did not finish within %s\n%s", timeout, res)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	default:
		t.Fatalf("running agenthost: %v\n%s", err, res)
	}
	return res
}

// baseEnv is the test process's environment without anything that would
// change agenthost's behaviour behind the test's back.
func baseEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AGENTHOST_"), strings.HasPrefix(name, "OPENAI_"),
			strings.HasPrefix(name, "E2E_"), name == "XDG_CONFIG_HOME", name == "XDG_STATE_HOME",
			strings.HasPrefix(name, "OTEL_"), name == "TRACEPARENT", name == "TRACESTATE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
}

// wantCode fails the test unless the run exited with want.
func wantCode(t *testing.T, r result, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit code %d, want %d\n%s", r.code, want, r)
	}
}

// decodeStdout decodes the run's stdout as one JSON document.
func decodeStdout[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, r)
	}
	return v
}

// ---------------------------------------------------------------------------
// Output documents (docs/cli.md, docs/events.md, docs/audit.md)

type serversDoc struct {
	Servers []serverEntry `json:"servers"`
}

type serverEntry struct {
	Name            string  `json:"name"`
	Status          string  `json:"status"`
	Error           *string `json:"error"`
	ProtocolVersion *string `json:"protocolVersion"`
	SecureParams    bool    `json:"secureParams"`
	Tools           int     `json:"tools"`
}

func (d serversDoc) server(t *testing.T, name string) serverEntry {
	t.Helper()
	for _, s := range d.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("servers --json has no server %q: %+v", name, d.Servers)
	return serverEntry{}
}

type toolsDoc struct {
	Servers []toolsServer `json:"servers"`
}

type toolsServer struct {
	Name            string     `json:"name"`
	Status          string     `json:"status"`
	Error           *string    `json:"error"`
	ProtocolVersion *string    `json:"protocolVersion"`
	SecureParams    bool       `json:"secureParams"`
	Tools           []toolInfo `json:"tools"`
}

type toolInfo struct {
	Name           string          `json:"name"`
	ExposedName    *string         `json:"exposedName"`
	Status         string          `json:"status"`
	Reason         *string         `json:"reason"`
	InputSchema    json.RawMessage `json:"inputSchema"`
	SecureParams   []string        `json:"secureParams"`
	SecureRequired []string        `json:"secureRequired"`
}

func (d toolsDoc) server(t *testing.T, name string) toolsServer {
	t.Helper()
	for _, s := range d.Servers {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("tools --json has no server %q", name)
	return toolsServer{}
}

// tools returns the server's tools by name; a name listed more than once
// maps to all its entries.
func (s toolsServer) tools() map[string][]toolInfo {
	out := map[string][]toolInfo{}
	for _, tl := range s.Tools {
		out[tl.Name] = append(out[tl.Name], tl)
	}
	return out
}

func (s toolsServer) tool(t *testing.T, name string) toolInfo {
	t.Helper()
	got := s.tools()[name]
	if len(got) != 1 {
		t.Fatalf("server %s lists tool %q %d times, want once: %+v", s.Name, name, len(got), s.Tools)
	}
	return got[0]
}

func reasonOf(tl toolInfo) string {
	if tl.Reason == nil {
		return ""
	}
	return *tl.Reason
}

// callDoc is `call --json` output: a result or an error.
type callDoc struct {
	Server            string          `json:"server"`
	Tool              string          `json:"tool"`
	IsError           bool            `json:"isError"`
	Content           []contentItem   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Error             *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

type contentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (c callDoc) text() string {
	var parts []string
	for _, item := range c.Content {
		parts = append(parts, item.Text)
	}
	return strings.Join(parts, "\n")
}

// wantCallError checks a failed `call --json`: exit code, error kind, and a
// non-empty message. It returns the message.
func wantCallError(t *testing.T, r result, code int, kind string) string {
	t.Helper()
	wantCode(t, r, code)
	doc := decodeStdout[callDoc](t, r)
	if doc.Error == nil {
		t.Fatalf("call --json printed no error object\n%s", r)
	}
	if doc.Error.Kind != kind {
		t.Fatalf("error kind %q, want %q\n%s", doc.Error.Kind, kind, r)
	}
	if strings.TrimSpace(doc.Error.Message) == "" {
		t.Fatalf("error message is empty\n%s", r)
	}
	return doc.Error.Message
}

// ---------------------------------------------------------------------------
// Files: tools, configs

// writeJSON writes v as JSON into dir/name and returns the path.
func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("encoding %s: %v", name, err)
	}
	return writeFile(t, dir, name, data)
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// obj is shorthand for JSON objects in tool definitions and configs.
type obj = map[string]any

// allowAll is an approvals section under which every call is allowed
// without asking: these tests are about connections and secure parameters,
// not policy (tools without risk metadata are otherwise denied, fail-closed).
func allowAll() obj {
	return obj{
		"catalogue": []obj{{"server": "*", "tool": "*", "metadata": obj{
			"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto",
			"approvalRecommendation": "none", "minTrustLevel": 1,
		}}},
		"noMatch": "allow",
	}
}

// writeConfig writes cfg as agenthost's YAML config into a new directory
// and returns its path. Unless cfg says otherwise, every call is allowed
// (allowAll) and audit records go to audit.jsonl beside the config.
func writeConfig(t *testing.T, cfg obj) string {
	t.Helper()
	dir := t.TempDir()
	if _, ok := cfg["approvals"]; !ok {
		cfg["approvals"] = allowAll()
	}
	if _, ok := cfg["audit"]; !ok {
		cfg["audit"] = obj{"path": filepath.Join(dir, "audit.jsonl")}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatalf("encoding config: %v", err)
	}
	return writeFile(t, dir, "agenthost.yaml", data)
}

// stdioServer is an mcpServers entry that runs the test server over stdio.
func stdioServer(tools, record string, extraArgs ...string) obj {
	args := []string{"--tools", tools}
	if record != "" {
		args = append(args, "--record", record)
	}
	return obj{"command": testServerBin, "args": append(args, extraArgs...)}
}

// values binds each secure parameter to a literal value.
func values(params map[string]any) obj {
	out := obj{}
	for name, v := range params {
		out[name] = obj{"value": v}
	}
	return out
}

// ---------------------------------------------------------------------------
// The test server over HTTP

type httpServer struct {
	url    string
	record string
	cmd    *exec.Cmd
	done   chan struct{}
}

// startHTTPServer runs the test server on a loopback port for the rest of
// the test, recording what it receives.
func startHTTPServer(t *testing.T, tools string, extraArgs ...string) *httpServer {
	t.Helper()
	dir := t.TempDir()
	s := &httpServer{record: filepath.Join(dir, "record.jsonl"), done: make(chan struct{})}
	addrFile := filepath.Join(dir, "addr")
	args := append([]string{"--transport", "http", "--addr", "127.0.0.1:0", "--addr-file", addrFile,
		"--tools", tools, "--record", s.record}, extraArgs...)
	s.cmd = exec.Command(testServerBin, args...)
	var stderr bytes.Buffer
	s.cmd.Stderr = &stderr
	sp := spawn(t, "the HTTP test server", s.cmd, true)
	s.done = sp.done

	deadline := time.After(15 * time.Second)
	for {
		if data, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
			s.url = strings.TrimSpace(string(data))
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("the HTTP test server exited before listening: %s", stderr.String())
		case <-deadline:
			t.Fatalf("the HTTP test server did not listen within 15s: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitExit waits for the server process to end (after a die behaviour).
func (s *httpServer) waitExit(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(within):
		t.Fatalf("the HTTP test server is still running %s after it should have died", within)
	}
}

// closedLoopbackURL is an http URL on a loopback port nothing listens on.
func closedLoopbackURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/mcp"
}

// ---------------------------------------------------------------------------
// Record files

// recorded is one line of a test server's record file.
type recorded struct {
	Dir        string            `json:"dir"`
	Transport  string            `json:"transport"`
	HTTPMethod string            `json:"httpMethod"`
	Headers    map[string]string `json:"headers"`
	Message    json.RawMessage   `json:"message"`
}

type rpcMessage struct {
	ID     json.RawMessage            `json:"id"`
	Method string                     `json:"method"`
	Params map[string]json.RawMessage `json:"params"`
}

func (r recorded) rpc() rpcMessage {
	var m rpcMessage
	_ = json.Unmarshal(r.Message, &m)
	return m
}

// isRequest reports a JSON-RPC request (method and id) from the client.
func (r recorded) isRequest() bool {
	m := r.rpc()
	return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// readRecord reads a record file; a missing file (the server never ran)
// is an empty record.
func readRecord(t *testing.T, path string) []recorded {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recorded
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record %s: bad line %q: %v", path, sc.Text(), err)
		}
		if r.Dir == "in" {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// withMethod keeps the recorded messages of one JSON-RPC method.
func withMethod(recs []recorded, method string) []recorded {
	var out []recorded
	for _, r := range recs {
		if r.rpc().Method == method {
			out = append(out, r)
		}
	}
	return out
}

func methods(recs []recorded) []string {
	var out []string
	for _, r := range recs {
		if m := r.rpc().Method; m != "" {
			out = append(out, m)
		}
	}
	return out
}

// jsonField decodes one params field, failing the test when it is absent.
func jsonField[T any](t *testing.T, params map[string]json.RawMessage, key string) T {
	t.Helper()
	var v T
	raw, ok := params[key]
	if !ok {
		t.Fatalf("params have no %q: %s", key, mustJSON(params))
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("params %q: %v", key, err)
	}
	return v
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// hasExtension reports whether a capabilities object declares the
// secure-params extension.
func hasExtension(capabilities json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	_ = json.Unmarshal(capabilities, &caps)
	_, ok := caps.Extensions[secureExt]
	return ok
}

// metaOf returns a request's _meta object.
func metaOf(r recorded) map[string]json.RawMessage {
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(r.rpc().Params["_meta"], &meta)
	return meta
}

// ---------------------------------------------------------------------------
// Peers and canaries

// everythingServer is the path of @modelcontextprotocol/server-everything's
// entry point; the suite fails (never skips) when the peers are missing.
func everythingServer(t *testing.T) (node, script string) {
	t.Helper()
	script = filepath.Join(moduleRoot, "e2e", "peers", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the npm peer @modelcontextprotocol/server-everything is not installed (%v): run `make peers`", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): install Node.js 20+ and run `make peers`", err)
	}
	return node, script
}

// newCanary returns a unique value that must never be printed.
func newCanary(t *testing.T, label string) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "canary-" + label + "-" + hex.EncodeToString(b[:])
}

// wantNoCanary fails when any canary appears in the run's output.
func wantNoCanary(t *testing.T, r result, canaries ...string) {
	t.Helper()
	for _, c := range canaries {
		if strings.Contains(r.stdout, c) {
			t.Errorf("canary %q leaked to stdout\n%s", c, r)
		}
		if strings.Contains(r.stderr, c) {
			t.Errorf("canary %q leaked to stderr\n%s", c, r)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// spawned is a process started by spawn.
type spawned struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // Wait's error; read it after done
}

// spawn starts cmd in its own process group, reaps it, and stops it at the
// end of the test: gently (SIGTERM, then SIGKILL to the group after 3 s)
// or at once.
func spawn(t *testing.T, what string, cmd *exec.Cmd, gentle bool) *spawned {
	t.Helper()
	inOwnProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", what, err)
	}
	p := &spawned{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if gentle {
			terminate(cmd)
			select {
			case <-p.done:
				return
			case <-time.After(3 * time.Second):
			}
		}
		_ = killProcessGroup(cmd)
		<-p.done
	})
	return p
}

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
