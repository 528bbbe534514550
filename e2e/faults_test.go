//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestFtHangingServerCallTimeout: a tool that never answers times out after
// the server's callTimeout; the model is told, and the rest of the session
// (another call on the same server) goes on.
func TestFtHangingServerCallTimeout(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
				ftPlainTool("stall", obj{"hang": true}),
				ftPlainTool("fine", obj{"text": "fine answered"}),
			})
			entry, record := serverFor(t, transport, tools, "")
			entry["callTimeout"] = "1s"
			model := ftStartModel(t, modeltest.Script{
				ftCalls(ftCall("srv__stall", `{"n":1}`)),
				ftCalls(ftCall("srv__fine", `{"n":2}`)),
				{Text: "carried on"},
			})
			cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": entry}})

			r := runWithTimeout(t, 20*time.Second, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
			wantCode(t, r, 0)
			s := ftParseSession(t, r)
			if end := s.end(t); end.Reason != "done" || end.Steps != 3 {
				t.Fatalf("session ended %q after %d steps, want done after 3\n%s", end.Reason, end.Steps, r)
			}
			stall := s.result(t, ftCallID(0, 0))
			if !s.failed(t, ftCallID(0, 0)) || !strings.Contains(stall.text(), "did not answer in time") {
				t.Errorf("the hanging call: want a timeout error for the model, got %q", stall.text())
			}
			if e, ok := s.errorOf(ftCallID(0, 0)); !ok || e.Kind != "unavailable" {
				t.Errorf("the hanging call: want an error event of kind unavailable, got %+v", e)
			}
			if s.failed(t, ftCallID(1, 0)) || s.result(t, ftCallID(1, 0)).text() != "fine answered" {
				t.Errorf("the call after the timeout did not succeed\n%s", r)
			}
			if r.elapsed > 10*time.Second {
				t.Errorf("the session took %s with a 1s call timeout", r.elapsed)
			}
			recs := readRecord(t, record)
			if _, names := ftToolCalls(t, record); !slices.Equal(names, []string{"stall", "fine"}) {
				t.Errorf("the server saw calls %v, want [stall fine]", names)
			}
			// Over stdio only a notifications/cancelled stops the server's
			// work; over HTTP (2026-07-28) ending the request's stream does.
			// (The subscriptions/listen stream is cancelled too when the
			// host exits, racing its close: only the call's count.)
			var stallID json.RawMessage
			for _, r := range withMethod(recs, "tools/call") {
				if m := r.rpc(); string(m.Params["name"]) == `"stall"` {
					stallID = m.ID
				}
			}
			n := 0
			for _, r := range withMethod(recs, "notifications/cancelled") {
				if string(r.rpc().Params["requestId"]) == string(stallID) {
					n++
				}
			}
			if transport == "stdio" && n != 1 {
				t.Errorf("the server got %d notifications/cancelled for the timed-out request, want 1", n)
			}
			// The model was told, in the tool message answering its call.
			msgs := model.recording(t).MessagesOf(1)
			if last := msgs[len(msgs)-1]; last.Role != "tool" || !strings.Contains(last.Text(), "did not answer in time") {
				t.Errorf("the model's next request does not carry the timeout: %+v", last)
			}
			model.wantNoFailures(t)
		})
	}
}

// ftRefuser holds a port while the real server is down: it accepts every
// connection and closes it at once, counting them.
type ftRefuser struct {
	l       net.Listener
	accepts atomic.Int64
	wg      sync.WaitGroup
}

func ftRefuse(t *testing.T, addr string) *ftRefuser {
	t.Helper()
	var l net.Listener
	waitFor(t, 5*time.Second, "the port "+addr+" to be free", func() bool {
		var err error
		l, err = net.Listen("tcp", addr)
		return err == nil
	})
	r := &ftRefuser{l: l}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			r.accepts.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *ftRefuser) stop() {
	_ = r.l.Close()
	r.wg.Wait()
}

// TestFtFlappingHTTPServer: within one run session the HTTP server goes
// away and comes back on the same port. Calls while it is down fail as
// unavailable; reconnects back off (a call right after a failed reconnect
// fails fast without touching the network, and the host never polls); once
// the server is back, the next call reconnects and succeeds.
func TestFtFlappingHTTPServer(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{ftPlainTool("ping", obj{"text": "pong"})})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ftFreePort(t)))
	first := startHTTPServer(t, tools, "--addr", addr)
	model := ftStartModel(t, modeltest.Script{
		ftCalls(ftCall("flaky__ping", `{"n":1}`)),
		// The server is down from here on.
		{ToolCalls: []modeltest.ToolCall{ftCall("flaky__ping", `{"n":2}`)}, Delay: time.Second},
		{ToolCalls: []modeltest.ToolCall{ftCall("flaky__ping", `{"n":3}`)}, Delay: 1500 * time.Millisecond},
		ftCalls(ftCall("flaky__ping", `{"n":4}`)),
		// The server is back before this answer.
		{ToolCalls: []modeltest.ToolCall{ftCall("flaky__ping", `{"n":5}`)}, Delay: 2 * time.Second},
		{Text: "done"},
	})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"flaky": obj{"url": first.url}}})

	p := ftStart(t, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	// The server goes down once the first call's result has reached the
	// model (its second request carries it, and is answered a second
	// later): stopped when it had only received the call, it could die
	// before answering, and the call before the outage failed.
	waitFor(t, 15*time.Second, "the first call's result", func() bool {
		_, names := ftToolCalls(t, first.record)
		return len(names) > 0 && len(model.recording(t)) >= 2 || p.exited()
	})
	_ = killProcessGroup(first.cmd)
	first.waitExit(t, 5*time.Second)
	down := ftRefuse(t, addr)

	// After the model has seen the result of call 4, bring the server back.
	waitFor(t, 20*time.Second, "the result of the fourth call", func() bool {
		return len(model.recording(t)) >= 5 || p.exited()
	})
	down.stop()
	attempts := down.accepts.Load()
	t.Logf("connection attempts while the server was down: %d", attempts)
	second := startHTTPServer(t, tools, "--addr", addr)

	r := p.wait(t, 20*time.Second)
	wantCode(t, r, 0)
	s := ftParseSession(t, r)
	if end := s.end(t); end.Reason != "done" {
		t.Fatalf("session ended %q, want done\n%s", end.Reason, r)
	}
	if s.failed(t, ftCallID(0, 0)) {
		t.Fatalf("the call before the outage failed\n%s", r)
	}
	for step := 1; step <= 3; step++ {
		if !s.failed(t, ftCallID(step, 0)) {
			t.Errorf("call %d succeeded while the server was down", step+1)
		}
		if e, ok := s.errorOf(ftCallID(step, 0)); !ok || e.Kind != "unavailable" {
			t.Errorf("call %d: want an error event of kind unavailable, got %+v", step+1, e)
		}
	}
	if e, _ := s.errorOf(ftCallID(3, 0)); !strings.Contains(e.Error, "the next attempt in") {
		t.Errorf("call 4, right after a failed reconnect, did not wait out the backoff: %q", e.Error)
	}
	if attempts > 4 {
		t.Errorf("%d connection attempts while the server was down for about 4s, want at most 4 (one per call)", attempts)
	}
	// While the server is down, the model keeps being offered its last
	// known tools: calling one is what reconnects.
	rec := model.recording(t)
	for i := 1; i < len(rec); i++ {
		if !strings.Contains(string(rec.ToolsOf(i)), `"flaky__ping"`) {
			t.Errorf("model request %d no longer offers flaky__ping (tools %s): after a failed reconnect the server's tools vanished from the view", i+1, rec.ToolsOf(i))
		}
	}
	if s.failed(t, ftCallID(4, 0)) {
		t.Fatalf("the call after the server came back failed: no reconnect (%s)\n%s", s.result(t, ftCallID(4, 0)).text(), r)
	}
	if calls, _ := ftToolCalls(t, second.record); len(calls) != 1 || jsonField[obj](t, calls[0].rpc().Params, "arguments")["n"] != float64(5) {
		t.Errorf("the restarted server should have seen exactly call 5, got %d calls", len(calls))
	}
	model.wantNoFailures(t)
}

// TestFtStdioServerDiesEveryCall: a stdio server that dies on every
// tools/call is restarted lazily, once per call, never in a loop: over the
// session and an idle pause after it, the number of processes started
// equals the number of calls.
func TestFtStdioServerDiesEveryCall(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{ftPlainTool("ping", obj{"text": "pong"})})
	record := filepath.Join(t.TempDir(), "record.jsonl")
	// 2025-11-25: initialize and tools/list are answered, tools/call kills it.
	entry := stdioServer(tools, record, "--eras", "legacy", "--die-after", "2")
	entry["protocolVersion"] = legacyVersion
	model := ftStartModel(t, modeltest.Script{
		ftCalls(ftCall("srv__ping", `{"n":1}`)),
		ftCalls(ftCall("srv__ping", `{"n":2}`)),
		ftCalls(ftCall("srv__ping", `{"n":3}`)),
		// An idle pause: nothing may reconnect in the background.
		{Text: "gave up", Delay: 2 * time.Second},
	})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": entry}})

	r := runWithTimeout(t, 20*time.Second, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 0)
	s := ftParseSession(t, r)
	if end := s.end(t); end.Reason != "done" {
		t.Fatalf("session ended %q, want done\n%s", end.Reason, r)
	}
	for step := 0; step < 3; step++ {
		if !s.failed(t, ftCallID(step, 0)) {
			t.Errorf("call %d succeeded, but the server dies on every call", step+1)
		}
		if e, ok := s.errorOf(ftCallID(step, 0)); !ok || e.Kind != "unavailable" {
			t.Errorf("call %d: want an error event of kind unavailable, got %+v", step+1, e)
		}
	}
	if n := ftConnects(t, record); n != 3 {
		t.Errorf("%d server processes were started for 3 calls, want 3 (one per call)", n)
	}
	if calls, _ := ftToolCalls(t, record); len(calls) != 3 {
		t.Errorf("the server saw %d tools/call, want 3 (no call is retried behind the model's back)", len(calls))
	}
	model.wantNoFailures(t)
}

// ftAuditScript is a session of three calls of srv__a.
func ftAuditScript() modeltest.Script {
	return modeltest.Script{
		ftCalls(ftCall("srv__a", `{"n":1}`)),
		ftCalls(ftCall("srv__a", `{"n":2}`)),
		ftCalls(ftCall("srv__a", `{"n":3}`)),
		{Text: "done"},
	}
}

// TestFtAuditUnwritable: when the audit log cannot be written, no call runs
// un-audited beyond the one whose record failed: that call's result is
// withheld from the model, and every later call is refused before it
// reaches the server. /dev/full fails the first write; a file size limit
// (RLIMIT_FSIZE, like a full disk) fails a write in the middle of the
// session, after a record was written.
func TestFtAuditUnwritable(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{ftPlainTool("a", obj{"text": "a ran"})})

	// check asserts the session's shape when the record of call failing
	// (1-based) is the first that could not be written.
	check := func(t *testing.T, r result, model *ftModel, serverCalls int, failing int) {
		t.Helper()
		s := ftParseSession(t, r)
		if end := s.end(t); end.Reason != "done" {
			t.Errorf("session ended %q, want done: the session goes on\n%s", end.Reason, r)
		}
		for step := 0; step < 3; step++ {
			call := step + 1
			switch {
			case call < failing:
				if s.failed(t, ftCallID(step, 0)) {
					t.Errorf("call %d, audited, failed\n%s", call, r)
				}
			default:
				if !s.failed(t, ftCallID(step, 0)) {
					t.Errorf("call %d returned a result although its record could not be written\n%s", call, r)
				}
				e, ok := s.errorOf(ftCallID(step, 0))
				if !ok || !strings.Contains(e.Error, "audit") {
					t.Errorf("call %d: want an error event naming the audit log, got %+v", call, e)
				}
			}
		}
		// The model never saw the result of a call whose record failed.
		rec := model.recording(t)
		for i := failing; i < len(rec); i++ {
			msgs := rec.MessagesOf(i)
			if last := msgs[len(msgs)-1]; strings.Contains(last.Text(), "a ran") {
				t.Errorf("model request %d carries the result of an un-audited call: %q", i+1, last.Text())
			}
		}
		// A call's decision record is written before it is sent, its
		// result record after: the call whose result record failed reached
		// the server, the one whose decision record failed did not; no
		// later one may.
		if serverCalls != failing && serverCalls != failing-1 {
			t.Errorf("the server ran %d calls, want %d or %d: after the audit failure no call may reach it", serverCalls, failing-1, failing)
		}
		if !strings.Contains(r.stderr, "audit") {
			t.Errorf("stderr does not report the audit failure\n%s", r)
		}
	}

	t.Run("dev_full", func(t *testing.T) {
		t.Parallel()
		entry, record := serverFor(t, "stdio", tools, "")
		model := ftStartModel(t, ftAuditScript())
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": entry}, "audit": obj{"path": "/dev/full"}})
		r := runWithTimeout(t, 20*time.Second, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
		calls, _ := ftToolCalls(t, record)
		check(t, r, model, len(calls), 1)
		if len(calls) != 0 {
			t.Errorf("the server ran %d calls: a call whose decision record could not be written was sent", len(calls))
		}

		// `call`: the caller gets an internal error, not the result.
		r = run(t, nil, "--config", cfg, "call", "srv", "a", "--json")
		msg := wantCallError(t, r, 1, "internal")
		if !strings.Contains(msg, "audit") {
			t.Errorf("the error does not name the audit log: %q", msg)
		}
		if strings.Contains(r.stdout, "a ran") {
			t.Errorf("call printed the result of an un-audited call\n%s", r)
		}
		if !strings.Contains(msg, "not sent") {
			t.Errorf("the error does not say the call was not sent: %q", msg)
		}
		if calls, _ := ftToolCalls(t, record); len(calls) != 0 {
			t.Errorf("the server ran %d calls: a call whose decision record could not be written was sent", len(calls))
		}
	})

	t.Run("fills_up_mid_session", func(t *testing.T) {
		t.Parallel()
		// The server and the model run outside the size limit (a stdio
		// server would inherit it and fail to write its record).
		server := startHTTPServer(t, tools)
		model := ftStartModel(t, ftAuditScript())
		dir := t.TempDir()
		audit := filepath.Join(dir, "audit.jsonl")
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": obj{"url": server.url}}, "audit": obj{"path": audit}})

		// Calibrate: the size of the two records (decision and result) of
		// this call.
		probe := writeConfig(t, obj{"mcpServers": obj{"srv": obj{"url": server.url}}, "audit": obj{"path": filepath.Join(dir, "probe.jsonl")}})
		wantCode(t, run(t, nil, "--config", probe, "call", "srv", "a", "--args", `{"n":0}`), 0)
		st, err := os.Stat(filepath.Join(dir, "probe.jsonl"))
		if err != nil || st.Size() < 200 {
			t.Fatalf("the probe call wrote no usable audit record (%v)", err)
		}
		serverCallsBefore := len(withMethod(readRecord(t, server.record), "tools/call"))

		// Fill the audit file so that one call's two records fit and half
		// of the next decision record does: that write is cut short.
		const blocks = 64 // of 512 bytes, the POSIX unit of ulimit -f
		room := st.Size() * 5 / 4
		pad := blocks*512 - room
		padding := append([]byte(`{"ft":"`+strings.Repeat("x", int(pad)-len(`{"ft":""}`+"\n"))+`"}`), '\n')
		if err := os.WriteFile(audit, padding, 0o600); err != nil {
			t.Fatal(err)
		}
		wrapper := ftScript(t, dir, "limited", fmt.Sprintf("trap '' XFSZ\nulimit -f %d || exit 99\nexec '%s' \"$@\"\n", blocks, agenthostBin))
		r := ftStartBinary(t, wrapper, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json").wait(t, 20*time.Second)

		calls := withMethod(readRecord(t, server.record), "tools/call")[serverCallsBefore:]
		data, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		written := bytes.TrimPrefix(data, padding)
		if n := bytes.Count(written, []byte(`"result":"ok"`)); n != 1 {
			t.Fatalf("want exactly one complete call's records before the limit, found %d (server calls %d)\n%s", n, len(calls), r)
		}
		// The write cut short left no torn line behind.
		if len(written) == 0 || written[len(written)-1] != '\n' {
			t.Errorf("the audit file ends with a torn line: %q", written[max(0, len(written)-80):])
		}
		for i, line := range bytes.Split(bytes.TrimSuffix(written, []byte("\n")), []byte("\n")) {
			if !json.Valid(line) {
				t.Errorf("audit line %d after the padding is not one JSON record: %q", i+1, line)
			}
		}
		check(t, r, model, len(calls), 2)
		if len(calls) != 1 {
			t.Errorf("the server ran %d calls, want 1: the second call's decision record did not fit", len(calls))
		}
	})
}

// TestFtAuditFileDeletedMidRun: the audit file deleted between two tool
// calls of a run is noticed before the second call runs; agenthost reopens
// the path, starts it with a gap line that says what was lost, and records
// the second call there (before, every later record went to the deleted
// file and the run ended with exit 0 and no trace).
func TestFtAuditFileDeletedMidRun(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{ftPlainTool("a", obj{"text": "a ran"})})
	entry, record := serverFor(t, "stdio", tools, "")
	// The second step waits, so the file is deleted after the first call's
	// records are written and before the second call.
	model := ftStartModel(t, modeltest.Script{
		ftCalls(ftCall("srv__a", `{"n":1}`)),
		{ToolCalls: []modeltest.ToolCall{ftCall("srv__a", `{"n":2}`)}, Delay: 2 * time.Second},
		{Text: "done"},
	})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": entry}, "audit": obj{"path": audit}})
	p := ftStart(t, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	waitFor(t, 20*time.Second, "the model request after the first call", func() bool { return len(model.recording(t)) >= 2 })
	before, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(before, []byte("\n")); n != 2 {
		t.Fatalf("before the deletion the audit file has %d lines, want the first call's decision and result\n%s", n, before)
	}
	if err := os.Remove(audit); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t, 20*time.Second)
	wantCode(t, r, 0)
	if calls, _ := ftToolCalls(t, record); len(calls) != 2 {
		t.Fatalf("the server ran %d calls, want 2\n%s", len(calls), r)
	}
	s := ftParseSession(t, r)
	if s.failed(t, ftCallID(1, 0)) {
		t.Errorf("the second call failed\n%s", r)
	}

	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatalf("no audit file after the deletion: the second call's records went nowhere: %v\n%s", err, r)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a gap line and the second call's two records, got %d lines\n%s", len(lines), data)
	}
	var gap struct {
		Phase, Reason, Message string
		Since                  time.Time
		Records                int
	}
	if err := json.Unmarshal([]byte(lines[0]), &gap); err != nil || gap.Phase != "gap" || gap.Reason != "deleted" ||
		gap.Records != 2 || gap.Since.IsZero() || gap.Message == "" {
		t.Errorf("first line is not the gap line (%v): %s", err, lines[0])
	}
	recs := rtReadAudit(t, writeFile(t, t.TempDir(), "records.jsonl", []byte(strings.Join(lines[1:], "\n")+"\n")))
	byCall := rtAuditByCall(t, recs)
	if a := rtWantAudit(t, byCall, ftCallID(1, 0), "a", "allow", "auto_allowed", "ok"); len(byCall) != 1 || string(a.Arguments) != `{"n":2}` {
		t.Errorf("records after the gap: %+v", recs)
	}
	if !strings.Contains(r.stderr, "audit file was deleted") {
		t.Errorf("stderr does not report the gap\n%s", r)
	}
}

// TestFtConfigErrors: a config with an error is exit 2 for every command,
// and the message names the file and the key (and never the bad value).
func TestFtConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		yaml string
		want []string // substrings of the message besides the file name
	}{
		{"unknown_key", "mcpServers:\n  srv:\n    command: x\n    bogusSetting: 1\n", []string{"mcpServers.srv.bogusSetting"}},
		{"bad_duration", "mcpServers:\n  srv:\n    command: x\n    callTimeout: 7 ftparsecs\n", []string{"mcpServers.srv.callTimeout"}},
		{"bad_llm_duration", "llm:\n  timeout: 7 ftparsecs\nmcpServers:\n  srv:\n    command: x\n", []string{"llm.timeout"}},
		{"unset_var", "mcpServers:\n  srv:\n    command: ${FT_SURELY_UNSET_VARIABLE}\n", []string{"mcpServers.srv.command", "FT_SURELY_UNSET_VARIABLE"}},
		{"unset_var_header", "mcpServers:\n  srv:\n    url: http://127.0.0.1:9/mcp\n    headers: {Authorization: \"Bearer ${FT_SURELY_UNSET_TOKEN}\"}\n",
			[]string{"mcpServers.srv.headers", "FT_SURELY_UNSET_TOKEN"}},
		{"bad_sha256", "mcpServers:\n  srv:\n    command: x\nsources:\n  vault: {plugin: ./p, sha256: ftnothex}\n", []string{"sources.vault.sha256"}},
		{"unknown_source", "mcpServers:\n  srv:\n    command: x\nbindings:\n  - server: srv\n    params: {token: {source: nowhere, ref: r}}\n",
			[]string{"bindings[0].params.token.source"}},
		{"audit_dir_missing", "mcpServers:\n  srv:\n    command: x\naudit: {path: /ft-no-such-dir/sub/audit.jsonl}\n", []string{"audit.path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, t.TempDir(), "broken-"+c.name+".yaml", []byte(c.yaml))
			for _, args := range [][]string{
				{"servers"},
				{"tools", "--json"},
				{"call", "srv", "t", "--json"},
				{"run", "hello"},
				{"policy", "explain", "srv", "t"},
			} {
				r := run(t, nil, append([]string{"--config", path}, args...)...)
				wantCode(t, r, 2)
				out := r.stdout + r.stderr
				for _, want := range append([]string{filepath.Base(path)}, c.want...) {
					if !strings.Contains(out, want) {
						t.Errorf("%s: the message does not name %q\n%s", args[0], want, r)
					}
				}
				if strings.Contains(out, "ftparsecs") || strings.Contains(out, "ftnothex") {
					t.Errorf("%s: the message repeats the bad value\n%s", args[0], r)
				}
				if args[0] == "call" {
					wantCallError(t, r, 2, "config")
				}
			}
		})
	}
}
