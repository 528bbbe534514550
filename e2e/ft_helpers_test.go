package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// Helpers of the plugin, peer, fault, leak and demo tests (prefix ft).

// ftBinaries are the extra executables these tests need, built once into a
// subdirectory of TestMain's binary directory (which TestMain removes).
type ftBinaries struct {
	fakellm  string // e2e/cmd/fakellm
	credFile string // plugins/cmd/agenthost-cred-file
	credExec string // plugins/cmd/agenthost-cred-exec
}

var (
	ftBuildOnce sync.Once
	ftBuilt     ftBinaries
	ftBuildErr  error
)

// ftBins builds the fake model server and the example credential plugins
// on first use.
func ftBins(t *testing.T) ftBinaries {
	t.Helper()
	ftBuildOnce.Do(func() {
		dir := filepath.Join(filepath.Dir(agenthostBin), "ft")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			ftBuildErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		goTool := goCommand()
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", dir+string(filepath.Separator),
			"./e2e/cmd/fakellm", "./plugins/cmd/agenthost-cred-file", "./plugins/cmd/agenthost-cred-exec")
		cmd.Dir = moduleRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			ftBuildErr = fmt.Errorf("go build fakellm and the credential plugins: %w\n%s", err, out)
			return
		}
		ftBuilt = ftBinaries{
			fakellm:  filepath.Join(dir, exe("fakellm")),
			credFile: filepath.Join(dir, exe("agenthost-cred-file")),
			credExec: filepath.Join(dir, exe("agenthost-cred-exec")),
		}
	})
	if ftBuildErr != nil {
		t.Fatal(ftBuildErr)
	}
	return ftBuilt
}

// ftSHA256 is the hex SHA-256 of a file, the form `sources.NAME.sha256` takes.
func ftSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ftPluginSource is a `sources` entry for a plugin executable, pinned to its
// current checksum.
func ftPluginSource(t *testing.T, path string, config obj) obj {
	t.Helper()
	return obj{"plugin": path, "sha256": ftSHA256(t, path), "config": config}
}

// ftScript writes an executable shell script and returns its path.
func ftScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// ftSecureTool is a tool whose secureInputSchema requires every named
// string parameter.
func ftSecureTool(name string, behaviour obj, params ...string) obj {
	tool := obj{
		"name":              name,
		"inputSchema":       obj{"type": "object", "properties": obj{"n": obj{"type": "integer"}}},
		"secureInputSchema": secureSchema(params, params...),
	}
	if behaviour != nil {
		tool["x-test"] = behaviour
	}
	return tool
}

// ftPlainTool is a tool without secure parameters.
func ftPlainTool(name string, behaviour obj) obj {
	tool := obj{"name": name, "inputSchema": obj{"type": "object", "properties": obj{"n": obj{"type": "integer"}}}}
	if behaviour != nil {
		tool["x-test"] = behaviour
	}
	return tool
}

// ---------------------------------------------------------------------------
// The scripted model

// ftModel is a running fakellm serving one script.
type ftModel struct {
	url    string
	record string
	cmd    *exec.Cmd
	done   chan struct{}
}

// ftStartModel serves the script on a loopback port for the rest of the test.
func ftStartModel(t *testing.T, script modeltest.Script) *ftModel {
	t.Helper()
	bins := ftBins(t)
	dir := t.TempDir()
	data, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	scriptPath := writeFile(t, dir, "script.json", data)
	addrFile := filepath.Join(dir, "addr")
	m := &ftModel{record: filepath.Join(dir, "model-record.jsonl"), done: make(chan struct{})}
	m.cmd = exec.Command(bins.fakellm, "--script", scriptPath, "--addr", "127.0.0.1:0",
		"--addr-file", addrFile, "--record", m.record)
	var stderr syncBuffer
	m.cmd.Stderr = &stderr
	sp := spawn(t, "fakellm", m.cmd, true)
	m.done = sp.done

	waitFor(t, 15*time.Second, "fakellm to listen", func() bool {
		select {
		case <-m.done:
			t.Fatalf("fakellm exited before listening: %s", stderr.String())
		default:
		}
		data, err := os.ReadFile(addrFile)
		if err == nil && len(bytes.TrimSpace(data)) > 0 {
			m.url = strings.TrimSpace(string(data))
			return true
		}
		return false
	})
	return m
}

// llm is the config's llm section pointing at this model.
func (m *ftModel) llm() obj {
	return obj{"baseURL": m.url, "model": "ft-scripted", "apiKey": "ft-not-a-real-key", "timeout": "20s"}
}

// recording reads what the host sent to the model so far.
func (m *ftModel) recording(t *testing.T) modeltest.Recording {
	t.Helper()
	rec, err := modeltest.ReadRecording(m.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// wantNoFailures fails when the host sent a request OpenAI would reject.
func (m *ftModel) wantNoFailures(t *testing.T) {
	t.Helper()
	if f := m.recording(t).Failures(); len(f) > 0 {
		t.Errorf("the model server recorded protocol failures: %q", f)
	}
}

// ftCall is a model tool call.
func ftCall(name, args string) modeltest.ToolCall {
	return modeltest.ToolCall{Name: name, Arguments: args}
}

// ftCalls is a step calling the given tools at once.
func ftCalls(calls ...modeltest.ToolCall) modeltest.Step {
	return modeltest.Step{ToolCalls: calls}
}

// ---------------------------------------------------------------------------
// Running agenthost in the background

// ftProc is an agenthost process the test interacts with while it runs.
type ftProc struct {
	args           []string
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	start          time.Time
	done           chan struct{}
	sp             *spawned
}

// ftStart starts agenthost like run does, without waiting for it.
func ftStart(t *testing.T, env []string, args ...string) *ftProc {
	t.Helper()
	return ftStartBinary(t, agenthostBin, env, args...)
}

// ftStartBinary starts bin (agenthost or a wrapper that execs it).
func ftStartBinary(t *testing.T, bin string, env []string, args ...string) *ftProc {
	t.Helper()
	return ftStartBinaryIn(t, bin, t.TempDir(), env, args...)
}

// ftStartIn is ftStart in the folder dir.
func ftStartIn(t *testing.T, dir string, env []string, args ...string) *ftProc {
	t.Helper()
	return ftStartBinaryIn(t, agenthostBin, dir, env, args...)
}

// ftStartBinaryIn is ftStartBinary in the folder dir.
func ftStartBinaryIn(t *testing.T, bin, dir string, env []string, args ...string) *ftProc {
	t.Helper()
	p := &ftProc{args: args, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(baseEnv(t), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.start = time.Now()
	p.sp = spawn(t, "agenthost", p.cmd, false)
	p.done = p.sp.done

	return p
}

// wait waits for the process to exit; one that runs longer than timeout is
// a hang, and is killed.
func (p *ftProc) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = killProcessGroup(p.cmd)
		<-p.done
		t.Fatalf("agenthost did not finish within %s\n%s", timeout, p.result())
	}
	_ = killProcessGroup(p.cmd)
	res := p.result()
	var exitErr *exec.ExitError
	switch {
	case p.sp.err == nil:
	case errors.As(p.sp.err, &exitErr):
		res.code = exitErr.ExitCode()
	default:
		t.Fatalf("running agenthost: %v\n%s", p.sp.err, res)
	}
	return res
}

func (p *ftProc) result() result {
	return result{args: p.args, stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.start)}
}

// exited reports whether the process has ended.
func (p *ftProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ---------------------------------------------------------------------------
// agenthost-stream-json events

// ftSession is a parsed agenthost-stream-json run.
type ftSession struct {
	events []streamEvent
}

// ftParseSession decodes every stdout line of an agenthost-stream-json run.
func ftParseSession(t *testing.T, r result) ftSession {
	t.Helper()
	var s ftSession
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e streamEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("stream-json line is not JSON: %q: %v\n%s", line, err, r)
		}
		s.events = append(s.events, e)
	}
	if len(s.events) == 0 {
		t.Fatalf("the run printed no events\n%s", r)
	}
	return s
}

// end returns the session_end event, failing when it is not the last one.
func (s ftSession) end(t *testing.T) streamEvent {
	t.Helper()
	last := s.events[len(s.events)-1]
	if last.Type != "session_end" {
		t.Fatalf("the last event is %q, want session_end: %+v", last.Type, s.events)
	}
	return last
}

// result returns the tool_result of the model's call callID.
func (s ftSession) result(t *testing.T, callID string) streamEvent {
	t.Helper()
	for _, e := range s.events {
		if e.Type == "tool_result" && e.CallID == callID {
			return e
		}
	}
	t.Fatalf("no tool_result for call %s: %+v", callID, s.events)
	return streamEvent{}
}

// errorOf returns the error event of call callID, if any.
func (s ftSession) errorOf(callID string) (streamEvent, bool) {
	for _, e := range s.events {
		if e.Type == "error" && e.CallID == callID {
			return e, true
		}
	}
	return streamEvent{}, false
}

// failed reports whether the tool_result of call callID is an error.
func (s ftSession) failed(t *testing.T, callID string) bool {
	t.Helper()
	e := s.result(t, callID)
	return e.IsError != nil && *e.IsError
}

// ftCallID is the id fakellm gives call j of step i (both 0-based).
func ftCallID(step, j int) string { return fmt.Sprintf("call_%d_%d", step, j) }

// ---------------------------------------------------------------------------
// Records

// ftToolCalls returns the tools/call requests a server recorded, with the
// tool name of each.
func ftToolCalls(t *testing.T, record string) ([]recorded, []string) {
	t.Helper()
	calls := withMethod(readRecord(t, record), "tools/call")
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = jsonField[string](t, c.rpc().Params, "name")
	}
	return calls, names
}

// ftSecureArgs returns the secureArguments of the recorded call of tool
// (the last one when there are several), failing when there is none.
func ftSecureArgs(t *testing.T, record, tool string) map[string]any {
	t.Helper()
	calls, names := ftToolCalls(t, record)
	for i := len(calls) - 1; i >= 0; i-- {
		if names[i] != tool {
			continue
		}
		got, ok := secureArgumentsOf(t, calls[i])
		if !ok {
			t.Fatalf("the call of %s carries no secureArguments: %s", tool, calls[i].Message)
		}
		return got
	}
	t.Fatalf("the server recorded no call of %s (calls: %v)", tool, names)
	return nil
}

// ftPluginPIDs returns the pids of the plugin processes the host started,
// from go-plugin's debug line "plugin started: ... pid=N" on stderr.
func ftPluginPIDs(stderr string) []int {
	var pids []int
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, "plugin started") {
			continue
		}
		if m := ftPIDPattern.FindStringSubmatch(line); m != nil {
			if pid, err := strconv.Atoi(m[1]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

var ftPIDPattern = regexp.MustCompile(`\bpid=(\d+)`)

// ftFreePort returns a loopback port nothing listens on right now.
func ftFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// ftWantAbsent fails when any canary occurs in text; where names the text.
func ftWantAbsent(t *testing.T, where, text string, canaries map[string]string) {
	t.Helper()
	for kind, c := range canaries {
		if strings.Contains(text, c) {
			i := strings.Index(text, c)
			from, to := max(0, i-120), min(len(text), i+len(c)+120)
			excerpt := strings.ReplaceAll(text[from:to], c, "<"+kind+" canary>")
			t.Errorf("the %s canary leaked into %s: ...%s...", kind, where, excerpt)
		}
	}
}

// ftConnects counts the connections a server saw: initialize (2025-11-25)
// and server/discover (2026-07-28) requests. A stdio server's record file is
// shared by every process started for it, so this also counts restarts.
func ftConnects(t *testing.T, record string) int {
	t.Helper()
	recs := readRecord(t, record)
	return len(withMethod(recs, "initialize")) + len(withMethod(recs, "server/discover"))
}
