package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// Helpers of the agent-loop and approvals tests (run_test.go,
// approvals_test.go): the scripted model server, stream-json events and
// audit records.

// The fakellm binary is built on first use, beside the binaries TestMain
// built, so the tests that do not need a model do not pay for it.
var (
	rtFakeLLMOnce sync.Once
	rtFakeLLMBin  string
	rtFakeLLMErr  error
)

func rtFakeLLM(t *testing.T) string {
	t.Helper()
	rtFakeLLMOnce.Do(func() {
		goTool := goCommand()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(filepath.Dir(agenthostBin), exe("fakellm"))
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, "./e2e/cmd/fakellm")
		cmd.Dir = moduleRoot
		if output, err := cmd.CombinedOutput(); err != nil {
			rtFakeLLMErr = fmt.Errorf("go build ./e2e/cmd/fakellm: %w\n%s", err, output)
			return
		}
		rtFakeLLMBin = out
	})
	if rtFakeLLMErr != nil {
		t.Fatal(rtFakeLLMErr)
	}
	return rtFakeLLMBin
}

// rtModel is a running fakellm process playing one script.
type rtModel struct {
	url    string // base URL ending in /v1
	record string // its record file
}

// rtStartModel runs the scripted model server for the rest of the test.
func rtStartModel(t *testing.T, script modeltest.Script) *rtModel {
	t.Helper()
	return rtStartModelWith(t, script)
}

// rtStartModelWith is rtStartModel with more of fakellm's flags (such as
// --api-key KEY).
func rtStartModelWith(t *testing.T, script modeltest.Script, flags ...string) *rtModel {
	t.Helper()
	if err := script.Validate(); err != nil {
		t.Fatalf("test script: %v", err)
	}
	bin := rtFakeLLM(t)
	dir := t.TempDir()
	data, err := json.Marshal(script)
	if err != nil {
		t.Fatalf("encoding the script: %v", err)
	}
	scriptPath := writeFile(t, dir, "script.json", data)
	m := &rtModel{record: filepath.Join(dir, "model-record.jsonl")}
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(bin, append([]string{"--script", scriptPath, "--addr", "127.0.0.1:0", "--addr-file", addrFile, "--record", m.record}, flags...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := spawn(t, "fakellm", cmd, true).done

	deadline := time.After(15 * time.Second)
	for {
		if data, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(data)) > 0 {
			m.url = strings.TrimSpace(string(data))
			return m
		}
		select {
		case <-done:
			t.Fatalf("fakellm exited before listening: %s", stderr.String())
		case <-deadline:
			t.Fatalf("fakellm did not listen within 15s: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// llm is the config's llm section pointing at this server.
func (m *rtModel) llm() obj {
	return obj{"baseURL": m.url, "apiKey": "test", "model": "scripted"}
}

// recording reads every request the model server received so far.
func (m *rtModel) recording(t *testing.T) modeltest.Recording {
	t.Helper()
	if _, err := os.Stat(m.record); os.IsNotExist(err) {
		return nil
	}
	rec, err := modeltest.ReadRecording(m.record)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// wantNoFailures fails the test for every wire-check failure the model
// server recorded (tool messages that answer no call, unanswered calls,
// an exhausted script, ...).
func (m *rtModel) wantNoFailures(t *testing.T) modeltest.Recording {
	t.Helper()
	rec := m.recording(t)
	for _, f := range rec.Failures() {
		t.Errorf("model server: %s", f)
	}
	return rec
}

// rtCall is one scripted tool call with a fixed id.
func rtCall(id, name string, args any) modeltest.ToolCall {
	var s string
	switch a := args.(type) {
	case string:
		s = a
	default:
		data, err := json.Marshal(a)
		if err != nil {
			panic(err)
		}
		s = string(data)
	}
	return modeltest.ToolCall{ID: id, Name: name, Arguments: s}
}

// rtCalls is a script step that makes the given tool calls.
func rtCalls(calls ...modeltest.ToolCall) modeltest.Step {
	return modeltest.Step{ToolCalls: calls}
}

// rtText is a script step that answers with text only.
func rtText(text string) modeltest.Step { return modeltest.Step{Text: text} }

// rtName returns a parameter name that cannot occur by chance.
func rtName(t *testing.T, label string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return label + "_" + hex.EncodeToString(b[:])
}

// ---------------------------------------------------------------------------
// agenthost-stream-json events (docs/events.md)

type streamUsage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
}

type streamEvent struct {
	Type        string          `json:"type"`
	SessionID   string          `json:"sessionId"`
	Step        int             `json:"step"`
	Text        string          `json:"text"`
	CallID      string          `json:"callId"`
	ExposedName string          `json:"exposedName"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Decision    string          `json:"decision"`
	Outcome     string          `json:"outcome"`
	Approvers   int             `json:"approvers"`
	IsError     *bool           `json:"isError"`
	Content     []contentItem   `json:"content"`
	TaskID      string          `json:"taskId"`
	TaskStatus  string          `json:"taskStatus"`
	StatusMsg   string          `json:"statusMessage"`
	Kind        string          `json:"kind"`
	Error       string          `json:"error"`
	Reason      string          `json:"reason"`
	Steps       int             `json:"steps"`
	Usage       *streamUsage    `json:"usage"`

	raw string
}

func (e streamEvent) text() string {
	var parts []string
	for _, c := range e.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

var rtEventTypes = []string{"session_start", "assistant", "tool_call", "approval_requested", "approval", "tool_task", "tool_result", "error", "session_end"}

// rtEvents parses agenthost-stream-json output: every stdout line must be one JSON
// object of a known type, session_start first and session_end last, all of
// one session.
func rtEvents(t *testing.T, r result) []streamEvent {
	t.Helper()
	var events []streamEvent
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e streamEvent
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(&e); err != nil || dec.More() {
			t.Fatalf("stream-json line is not one JSON object: %q (%v)\n%s", line, err, r)
		}
		if !slices.Contains(rtEventTypes, e.Type) {
			t.Fatalf("stream-json line of unknown type %q: %s\n%s", e.Type, line, r)
		}
		e.raw = line
		events = append(events, e)
	}
	if len(events) < 2 {
		t.Fatalf("stream-json printed %d events, want at least session_start and session_end\n%s", len(events), r)
	}
	if events[0].Type != "session_start" {
		t.Errorf("first event is %s, want session_start\n%s", events[0].Type, r)
	}
	last := events[len(events)-1]
	if last.Type != "session_end" {
		t.Fatalf("last event is %s, want session_end\n%s", last.Type, r)
	}
	for _, e := range events {
		if e.SessionID == "" || e.SessionID != events[0].SessionID {
			t.Errorf("event %s has session id %q, want the session's %q", e.Type, e.SessionID, events[0].SessionID)
		}
	}
	for _, e := range events[:len(events)-1] {
		if e.Type == "session_end" {
			t.Errorf("session_end before the last event\n%s", r)
		}
	}
	return events
}

// rtEnd returns the session_end event, checking reason and steps.
func rtEnd(t *testing.T, events []streamEvent, reason string, steps int) streamEvent {
	t.Helper()
	end := events[len(events)-1]
	if end.Reason != reason || end.Steps != steps {
		t.Errorf("session_end reason %q after %d steps, want %q after %d: %s", end.Reason, end.Steps, reason, steps, end.raw)
	}
	if end.Usage == nil {
		t.Errorf("session_end has no usage: %s", end.raw)
	}
	return end
}

// rtOfCall returns the events of one tool call id, in order.
func rtOfCall(events []streamEvent, callID string) []streamEvent {
	var out []streamEvent
	for _, e := range events {
		if e.CallID == callID {
			out = append(out, e)
		}
	}
	return out
}

// rtOfType returns the events of one type.
func rtOfType(events []streamEvent, typ string) []streamEvent {
	var out []streamEvent
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// rtTypes lists the event types of events, for messages and sequence
// checks.
func rtTypes(events []streamEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// rtWantCall checks the events of one call: tool_call, then (unless the
// call was refused before the approval workflow) approval with the given
// outcome, then tool_result with the given isError. It returns the
// tool_result.
func rtWantCall(t *testing.T, events []streamEvent, callID, server, tool, outcome string, isError bool) streamEvent {
	t.Helper()
	evs := rtOfCall(events, callID)
	// error events may accompany a failed call; they are checked apart.
	evs = slices.DeleteFunc(evs, func(e streamEvent) bool { return e.Type == "error" })
	// An ask is announced (approval_requested) right before its decision;
	// nothing else is.
	for i, e := range evs {
		if e.Type == "approval_requested" && (i+1 == len(evs) || evs[i+1].Type != "approval" || evs[i+1].Decision != "ask") {
			t.Fatalf("call %s: approval_requested not followed by the ask's approval: %v", callID, rtTypes(evs))
		}
	}
	evs = slices.DeleteFunc(evs, func(e streamEvent) bool { return e.Type == "approval_requested" })
	want := []string{"tool_call", "approval", "tool_result"}
	if outcome == "" {
		want = []string{"tool_call", "tool_result"}
	}
	if got := rtTypes(evs); !slices.Equal(got, want) {
		t.Fatalf("call %s: events %v, want %v", callID, got, want)
	}
	tc := evs[0]
	if tc.Server != server || tc.Tool != tool || tc.ExposedName == "" {
		t.Errorf("call %s: tool_call names %s/%s (%s), want %s/%s", callID, tc.Server, tc.Tool, tc.ExposedName, server, tool)
	}
	if outcome != "" && evs[1].Outcome != outcome {
		t.Errorf("call %s: approval outcome %q, want %q: %s", callID, evs[1].Outcome, outcome, evs[1].raw)
	}
	res := evs[len(evs)-1]
	if res.IsError == nil || *res.IsError != isError {
		t.Errorf("call %s: tool_result isError %s, want %t: %s", callID, rtBoolText(res.IsError), isError, res.raw)
	}
	for _, e := range evs {
		if e.Step != tc.Step {
			t.Errorf("call %s: %s event at step %d, the call was made at step %d", callID, e.Type, e.Step, tc.Step)
		}
	}
	return res
}

func rtBoolText(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}

// ---------------------------------------------------------------------------
// Audit records (docs/audit.md)

type rtVote struct {
	ID       string    `json:"id"`
	Decision string    `json:"decision"`
	TS       time.Time `json:"ts"`
}

type rtAudit struct {
	TS           time.Time       `json:"ts"`
	SessionID    string          `json:"sessionId"`
	CallID       string          `json:"callId"`
	Phase        string          `json:"phase"`
	Server       string          `json:"server"`
	Tool         string          `json:"tool"`
	ToolDefHash  string          `json:"toolDefHash"`
	ExposedName  string          `json:"exposedName"`
	Arguments    json.RawMessage `json:"arguments"`
	SecureParams []string        `json:"secureParams"`
	Risk         json.RawMessage `json:"risk"`
	Rules        []string        `json:"rules"`
	Decision     string          `json:"decision"`
	Outcome      string          `json:"outcome"`
	Approvers    []rtVote        `json:"approvers"`
	Result       string          `json:"result"`
	DurationMs   *int64          `json:"durationMs"`
}

// rtAuditKeys are the keys every audit record carries.
var rtAuditKeys = []string{"ts", "sessionId", "callId", "phase", "server", "tool", "toolDefHash", "exposedName", "arguments",
	"secureParams", "risk", "rules", "decision", "outcome", "approvers", "result", "durationMs"}

// rtAuditPath is where writeConfig puts the audit file of a config.
func rtAuditPath(cfg string) string { return filepath.Join(filepath.Dir(cfg), "audit.jsonl") }

// rtReadAudit reads an audit file strictly: every line one JSON object
// with every documented key (docs/audit.md). A missing file is no records.
func rtReadAudit(t *testing.T, path string) []rtAudit {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	if data[len(data)-1] != '\n' {
		t.Errorf("audit file does not end with a newline (a torn record?): %q", data[max(0, len(data)-80):])
	}
	var out []rtAudit
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &keys); err != nil {
			t.Fatalf("audit line %d is not a JSON object: %v: %q", i+1, err, line)
		}
		for _, k := range rtAuditKeys {
			if _, ok := keys[k]; !ok {
				t.Errorf("audit line %d lacks %q: %s", i+1, k, line)
			}
		}
		var rec rtAudit
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %d: %v: %s", i+1, err, line)
		}
		out = append(out, rec)
	}
	return out
}

// rtAuditByCall indexes audit records by call id: a call has one decision
// record and, when it ran, one result record after it; the index holds the
// last one. It fails on any other shape.
func rtAuditByCall(t *testing.T, recs []rtAudit) map[string]rtAudit {
	t.Helper()
	out := map[string]rtAudit{}
	for _, r := range recs {
		prev, seen := out[r.CallID]
		switch {
		case r.Phase == "decision" && !seen:
		case r.Phase == "result" && seen && prev.Phase == "decision" && prev.Result == "pending":
			if prev.Decision != r.Decision || prev.Tool != r.Tool || prev.ToolDefHash != r.ToolDefHash || r.TS.Before(prev.TS) {
				t.Errorf("call %s: the result record does not follow its decision record: %+v / %+v", r.CallID, prev, r)
			}
		case r.Phase == "result" && !seen:
			t.Errorf("call %s has a result record without a decision record before it", r.CallID)
		default:
			t.Errorf("call %s: unexpected %s record (result %s) after %+v (present %t)", r.CallID, r.Phase, r.Result, prev, seen)
		}
		out[r.CallID] = r
	}
	return out
}

// rtWantAudit checks one call's audit record.
func rtWantAudit(t *testing.T, byCall map[string]rtAudit, callID, tool, decision, outcome, result string) rtAudit {
	t.Helper()
	rec, ok := byCall[callID]
	if !ok {
		t.Errorf("no audit record for call %s (%s)", callID, tool)
		return rtAudit{}
	}
	if rec.Tool != tool || rec.Decision != decision || rec.Outcome != outcome || rec.Result != result {
		t.Errorf("audit %s: tool %s decision %s outcome %s result %s; want %s %s %s %s",
			callID, rec.Tool, rec.Decision, rec.Outcome, rec.Result, tool, decision, outcome, result)
	}
	return rec
}

// rtWantNoText fails when any of the strings occurs in text.
func rtWantNoText(t *testing.T, where, text string, needles ...string) {
	t.Helper()
	for _, n := range needles {
		if n != "" && strings.Contains(text, n) {
			t.Errorf("%s contains %q", where, n)
		}
	}
}

// rtToolCallsOf returns the recorded tools/call requests naming tool.
func rtToolCallsOf(t *testing.T, recs []recorded, tool string) []recorded {
	t.Helper()
	var out []recorded
	for _, r := range withMethod(recs, "tools/call") {
		if jsonField[string](t, r.rpc().Params, "name") == tool {
			out = append(out, r)
		}
	}
	return out
}

// rtHandshakes counts the connection handshakes (initialize or
// server/discover) in a record: one per server process started.
func rtHandshakes(recs []recorded) []int {
	var idx []int
	for i, r := range recs {
		if m := r.rpc().Method; m == "initialize" || m == "server/discover" {
			idx = append(idx, i)
		}
	}
	return idx
}

// rtStarted is an agenthost process the test drives itself (signals, a
// terminal), with its output collected.
type rtStarted struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	args   []string
	start  time.Time
}

// rtStart starts agenthost in its own process group without waiting for
// it; the test's cleanup kills whatever is left.
func rtStart(t *testing.T, args ...string) *rtStarted {
	t.Helper()
	p := &rtStarted{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{}), args: args}
	p.cmd = exec.Command(agenthostBin, args...)
	p.cmd.Dir = t.TempDir()
	p.cmd.Env = baseEnv(t)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.start = time.Now()
	sp := spawn(t, "agenthost", p.cmd, false)
	p.done = sp.done

	return p
}

// wait waits up to within for the process to exit and returns the run.
func (p *rtStarted) wait(t *testing.T, within time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within):
		_ = killProcessGroup(p.cmd)
		<-p.done
		t.Fatalf("agenthost did not exit within %s\n--- stdout ---\n%s\n--- stderr ---\n%s", within, p.stdout, p.stderr)
	}
	res := result{args: p.args, stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.start)}
	if p.cmd.ProcessState != nil {
		res.code = p.cmd.ProcessState.ExitCode()
	}
	return res
}

// rtNoCrash fails when stderr shows a Go panic or stack trace.
func rtNoCrash(t *testing.T, r result) {
	t.Helper()
	for _, sign := range []string{"panic:", "goroutine ", "runtime error"} {
		if strings.Contains(r.stderr, sign) {
			t.Errorf("stderr shows a crash or stack trace (%q)\n%s", sign, r)
		}
	}
}
