package hooks

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agenthost/agenthost/internal/childproc"
)

func TestMatcher(t *testing.T) {
	tests := []struct {
		matcher string
		name    string
		want    bool
	}{
		{"", "mcp__orders__delete", true},
		{"*", "mcp__orders__delete", true},
		{"mcp__orders__delete", "mcp__orders__delete", true},
		{"mcp__orders__delete", "mcp__orders__delete_all", false},
		{"mcp__a__x|mcp__orders__delete", "mcp__orders__delete", true},
		{"mcp__.*", "mcp__orders__delete", true},
		{"mcp__orders__.*", "mcp__billing__delete", false},
		{"delete", "mcp__orders__delete", false}, // exact list, not a search
		{".*delete.*", "mcp__orders__delete", true},
		{"Bash", "mcp__orders__delete", false},
	}
	for _, tt := range tests {
		m, err := compileMatcher(tt.matcher)
		if err != nil {
			t.Fatalf("compileMatcher(%q): %v", tt.matcher, err)
		}
		if got := m.matches(tt.name); got != tt.want {
			t.Errorf("matcher %q on %q = %v, want %v", tt.matcher, tt.name, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		keys []string
	}{
		{"ok", Config{PreToolUse: []Group{{Matcher: "mcp__.*", Hooks: []Hook{{Type: "command", Command: "true"}}}}}, nil},
		{"bad everything", Config{
			PreToolUse:        []Group{{Matcher: "(", Hooks: []Hook{{Type: "http", Command: " ", Timeout: -1, SHA256: "xyz"}}}},
			PostToolUse:       []Group{{Matcher: "x"}},
			PermissionRequest: []Group{{Hooks: []Hook{{Type: "command", Command: "vote"}}}},
		}, []string{"PreToolUse[0].matcher", "PreToolUse[0].hooks[0].type", "PreToolUse[0].hooks[0].command",
			"PreToolUse[0].hooks[0].timeout", "PreToolUse[0].hooks[0].sha256", "PostToolUse[0].hooks", "PermissionRequest[0].hooks[0].approver"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("not a FieldError: %v", e)
					}
					got = append(got, fe.Key)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.keys, ",") {
				t.Fatalf("keys = %v, want %v", got, tt.keys)
			}
		})
	}
}

func TestPreAnswer(t *testing.T) {
	tests := []struct {
		name    string
		res     result
		want    Decision
		reason  string
		extra   string
		wantErr error
	}{
		{"empty", result{}, DecisionNone, "", "", nil},
		{"plain text", result{stdout: []byte("checked\n")}, DecisionNone, "", "", nil},
		{"exit 2", result{status: exitBlock, stderr: []byte("no deletes\n")}, DecisionDeny, "no deletes", "", nil},
		{"deny", result{stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"nope"}}`)}, DecisionDeny, "nope", "", nil},
		{"ask", result{stdout: []byte(`{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}`)}, DecisionAsk, "check", "", nil},
		{"allow with context", result{stdout: []byte(`{"hookSpecificOutput":{"permissionDecision":"allow","additionalContext":"prod db"}}`)}, DecisionAllow, "", "prod db", nil},
		{"defer", result{stdout: []byte(`{"hookSpecificOutput":{"permissionDecision":"defer"}}`)}, DecisionNone, "", "", nil},
		{"legacy block", result{stdout: []byte(`{"decision":"block","reason":"old style"}`)}, DecisionDeny, "old style", "", nil},
		{"legacy approve", result{stdout: []byte(`{"decision":"approve"}`)}, DecisionAllow, "", "", nil},
		{"continue false", result{stdout: []byte(`{"continue":false,"stopReason":"halt"}`)}, DecisionDeny, "halt", "", nil},
		{"continue false beats allow", result{stdout: []byte(`{"continue":false,"hookSpecificOutput":{"permissionDecision":"allow"}}`)}, DecisionDeny, "", "", nil},
		{"updatedInput refused", result{stdout: []byte(`{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"a":1}}}`)}, DecisionDeny, "", "", ErrBadOutput},
		{"bad json", result{stdout: []byte(`{"hookSpecificOutput":`)}, DecisionDeny, "", "", ErrBadOutput},
		{"unknown decision", result{stdout: []byte(`{"hookSpecificOutput":{"permissionDecision":"maybe"}}`)}, DecisionDeny, "", "", ErrBadOutput},
		{"unknown legacy decision", result{stdout: []byte(`{"decision":"perhaps"}`)}, DecisionDeny, "", "", ErrBadOutput},
		{"byte order mark, block", result{stdout: []byte("\xEF\xBB\xBF{\"decision\":\"block\"}")}, DecisionDeny, "", "", nil},
		{"byte order mark, deny", result{stdout: []byte("\xEF\xBB\xBF {\"hookSpecificOutput\":{\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no\"}}\n")}, DecisionDeny, "no", "", nil},
		{"UTF-16 block", result{stdout: []byte("\xFF\xFE{\x00\"\x00d\x00")}, DecisionDeny, "", "", ErrBadOutput},
		{"NUL before block", result{stdout: []byte("\x00{\"decision\":\"block\"}")}, DecisionDeny, "", "", ErrBadOutput},
		{"zero-width space before block", result{stdout: []byte("\u200b{\"decision\":\"block\"}")}, DecisionDeny, "", "", ErrBadOutput},
		{"terminal colour before block", result{stdout: []byte("\x1b[0m{\"decision\":\"block\"}")}, DecisionDeny, "", "", ErrBadOutput},
		{"coloured plain text", result{stdout: []byte("\x1b[32mchecked\x1b[0m\n")}, DecisionNone, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, extra, err := preAnswer(tt.res, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if d != tt.want || reason != tt.reason || extra != tt.extra {
				t.Fatalf("got (%q, %q, %q), want (%q, %q, %q)", d, reason, extra, tt.want, tt.reason, tt.extra)
			}
		})
	}
}

func TestPostAnswer(t *testing.T) {
	tests := []struct {
		name     string
		res      result
		withheld bool
		reason   string
		replaced string
		wantErr  error
	}{
		{"nothing", result{}, false, "", "", nil},
		{"replace mcp", result{stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":"[redacted]"}}`)}, false, "", `"[redacted]"`, nil},
		{"replace any", result{stdout: []byte(`{"hookSpecificOutput":{"updatedToolOutput":{"content":[]}}}`)}, false, "", `{"content":[]}`, nil},
		{"block", result{stdout: []byte(`{"decision":"block","reason":"pii"}`)}, true, "pii", "", nil},
		{"exit 2", result{status: exitBlock, stderr: []byte("pii")}, true, "pii", "", nil},
		{"bad json", result{stdout: []byte(`{`)}, true, "", "", ErrBadOutput},
		{"byte order mark, block", result{stdout: []byte("\xEF\xBB\xBF{\"decision\":\"block\",\"reason\":\"pii\"}")}, true, "pii", "", nil},
		{"UTF-16 block", result{stdout: []byte("\xFE\xFF\x00{\x00\"")}, true, "", "", ErrBadOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withheld, reason, replaced, _, err := postAnswer(tt.res, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if withheld != tt.withheld || reason != tt.reason || string(replaced) != tt.replaced {
				t.Fatalf("got (%v, %q, %s), want (%v, %q, %s)", withheld, reason, replaced, tt.withheld, tt.reason, tt.replaced)
			}
		})
	}
}

func TestPermissionAnswer(t *testing.T) {
	tests := []struct {
		name    string
		res     result
		want    Decision
		reason  string
		wantErr error
	}{
		{"no output", result{}, DecisionNone, "", nil},
		{"allow", result{stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`)}, DecisionAllow, "", nil},
		{"deny", result{stdout: []byte(`{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"freeze"}}}`)}, DecisionDeny, "freeze", nil},
		{"exit 2", result{status: exitBlock, stderr: []byte("no")}, DecisionDeny, "no", nil},
		{"updatedInput", result{stdout: []byte(`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{}}}}`)}, DecisionDeny, "", ErrBadOutput},
		{"unknown behavior", result{stdout: []byte(`{"hookSpecificOutput":{"decision":{"behavior":"maybe"}}}`)}, DecisionDeny, "", ErrBadOutput},
		{"bad json", result{stdout: []byte(`{"hook`)}, DecisionDeny, "", ErrBadOutput},
		{"byte order mark, deny", result{stdout: []byte("\xEF\xBB\xBF{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"deny\",\"message\":\"freeze\"}}}")}, DecisionDeny, "freeze", nil},
		{"NUL before deny", result{stdout: []byte("\x00{\"hookSpecificOutput\":{\"decision\":{\"behavior\":\"deny\"}}}")}, DecisionDeny, "", ErrBadOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := permissionAnswer(tt.res, nil)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if d != tt.want || reason != tt.reason {
				t.Fatalf("got (%q, %q), want (%q, %q)", d, reason, tt.want, tt.reason)
			}
		})
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{"", "text", `{"decision":"block"}`, `{"hookSpecificOutput":{"permissionDecision":"ask"}}`,
		`{"continue":false}`, `[1]`, `{"hookSpecificOutput":{"updatedMCPToolOutput":null}}`, "{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		d, _, _, err := preAnswer(result{stdout: stdout}, nil)
		if err != nil && d != DecisionDeny {
			t.Fatalf("a failed answer must deny, got %q", d)
		}
		withheld, _, _, _, err := postAnswer(result{stdout: stdout}, nil)
		if err != nil && !withheld {
			t.Fatal("a failed answer must withhold the result")
		}
		if d, _, err := permissionAnswer(result{stdout: stdout}, nil); err != nil && d != DecisionDeny {
			t.Fatalf("a failed vote must deny, got %q", d)
		}
		// Nothing but an explicit allow allows.
		if d, _, _, err := preAnswer(result{stdout: stdout}, nil); err == nil && d == DecisionAllow && !explicitAllow(stdout, "permissionDecision", "allow", "approve") {
			t.Fatalf("%q allowed without saying allow", stdout)
		}
		if d, _, err := permissionAnswer(result{stdout: stdout}, nil); err == nil && d == DecisionAllow && !explicitAllow(stdout, "behavior", "allow", "") {
			t.Fatalf("%q voted allow without saying allow", stdout)
		}
	})
}

// explicitAllow reports stdout that is (after whitespace and a UTF-8 byte
// order mark) one JSON object whose text holds the allowing key and value.
func explicitAllow(stdout []byte, key, value, legacy string) bool {
	t := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(stdout), []byte("\xEF\xBB\xBF")))
	var o map[string]any
	if json.Unmarshal(t, &o) != nil {
		return false
	}
	var found func(v any) bool
	found = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && ((k == key && s == value) || (k == "decision" && legacy != "" && strings.EqualFold(s, legacy))) {
					return true
				}
				if found(x) {
					return true
				}
			}
		}
		return false
	}
	return found(o)
}

// FuzzHiddenAnswer puts what the fuzzer finds in front of a blocking
// answer: as long as none of it is visible (whitespace, control and format
// characters, bytes that are not UTF-8, terminal escape sequences), the
// answer must still block (or the hook fail, which blocks too), never read
// as plain text that lets the call run.
func FuzzHiddenAnswer(f *testing.F) {
	for _, s := range []string{"", "\xEF\xBB\xBF", "\xFF\xFE", "\x00", "\u200b", "\x1b[0m", " \t\r\n", "\u2028", "\xEF\xBB\xBF\xEF\xBB\xBF"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, prefix []byte) {
		if !invisible(prefix) {
			return
		}
		block := append(append([]byte{}, prefix...), `{"decision":"block","hookSpecificOutput":{"decision":{"behavior":"deny"}}}`...)
		if d, _, _, _ := preAnswer(result{stdout: block}, nil); d != DecisionDeny {
			t.Fatalf("%q: PreToolUse answer %q, want deny", block, d)
		}
		if withheld, _, _, _, _ := postAnswer(result{stdout: block}, nil); !withheld {
			t.Fatalf("%q: PostToolUse result not withheld", block)
		}
		if d, _, _ := permissionAnswer(result{stdout: block}, nil); d != DecisionDeny {
			t.Fatalf("%q: PermissionRequest vote %q, want deny", block, d)
		}
	})
}

// invisible reports text with nothing a reader would see: whitespace,
// control and format characters, invalid UTF-8, and terminal escape
// sequences (ESC '[' parameters, a final letter).
func invisible(b []byte) bool {
	for len(b) > 0 {
		if b[0] == 0x1b && len(b) > 1 && b[1] == '[' {
			i := 2
			for i < len(b) && (b[i] == ';' || (b[i] >= '0' && b[i] <= '9')) {
				i++
			}
			if i < len(b) && b[i] >= 'A' && b[i] <= 'z' {
				i++
			}
			b = b[i:]
			continue
		}
		r, w := utf8.DecodeRune(b)
		if r != utf8.RuneError && !unicode.IsSpace(r) && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r) {
			return false
		}
		b = b[w:]
	}
	return true
}

// script writes an executable shell script into dir.
func script(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// newRunner compiles cfg with the tests' supervisor (testSupervisor).
func newRunner(t *testing.T, cfg Config, dir string) *Runner {
	t.Helper()
	return newRunnerWith(t, cfg, dir, testSupervisor)
}

// newRunnerWith compiles cfg with supervisor (nil: none, as for an
// embedder without one).
func newRunnerWith(t *testing.T, cfg Config, dir string, supervisor *childproc.Supervisor) *Runner {
	t.Helper()
	r, err := New(cfg, Options{Dir: dir, Supervisor: supervisor, Getenv: func(k string) string {
		return map[string]string{"PATH": os.Getenv("PATH"), "OPENAI_API_KEY": "sk-canary-host-secret"}[k]
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pre(command string, extra ...func(*Hook)) Config {
	h := Hook{Type: "command", Command: command}
	for _, f := range extra {
		f(&h)
	}
	return Config{PreToolUse: []Group{{Matcher: "mcp__orders__.*", Hooks: []Hook{h}}}}
}

var call = Call{SessionID: "s1", CallID: "c1", Server: "orders", Tool: "delete", Arguments: json.RawMessage(`{"id":7}`), SecureParams: []string{"token"}}

func TestPreRuns(t *testing.T) {
	dir := t.TempDir()
	stdinFile := filepath.Join(dir, "stdin.json")
	envFile := filepath.Join(dir, "env.txt")
	echo := script(t, dir, "echo.sh", `cat > "`+stdinFile+`"; env > "`+envFile+`"; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"double check"}}'`)
	pinned := script(t, dir, "pinned.sh", `echo '{"decision":"block","reason":"pinned says no"}'`)
	content, _ := os.ReadFile(pinned)
	sum := sha256.Sum256(content)
	pin := hex.EncodeToString(sum[:])
	tests := []struct {
		name    string
		cfg     Config
		call    Call
		want    Decision
		reason  string
		wantErr error
	}{
		{"ask", pre(echo), call, DecisionAsk, "double check", nil},
		{"not matched", pre(echo), Call{Server: "billing", Tool: "delete"}, DecisionNone, "", nil},
		{"exit 2", pre(`echo "not today" >&2; exit 2`), call, DecisionDeny, "not today", nil},
		{"crash", pre(`exit 1`), call, DecisionDeny, "", ErrFailed},
		{"missing command", pre(filepath.Join(dir, "nope"), func(h *Hook) { h.Args = []string{} }), call, DecisionDeny, "", ErrFailed},
		{"timeout", pre(`sleep 30`, func(h *Hook) { h.Timeout = 0.2 }), call, DecisionDeny, "", ErrTimeout},
		{"too much output", pre(`head -c 1100000 /dev/zero | tr '\\0' a`), call, DecisionDeny, "", ErrBadOutput},
		{"pin ok", pre(pinned, func(h *Hook) { h.SHA256 = pin }), call, DecisionDeny, "pinned says no", nil},
		{"pin mismatch", pre(pinned, func(h *Hook) { h.SHA256 = strings.Repeat("0", 64) }), call, DecisionDeny, "", ErrPinMismatch},
	}
	// The same answers with and without a supervisor.
	for _, mode := range []struct {
		name       string
		supervisor *childproc.Supervisor
	}{{"supervised", testSupervisor}, {"unsupervised", nil}} {
		if mode.supervisor == nil && mode.name == "supervised" {
			continue // no supervisor on this system
		}
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				v := newRunnerWith(t, tt.cfg, dir, mode.supervisor).Pre(context.Background(), tt.call)
				if !errors.Is(v.Failure, tt.wantErr) || (tt.wantErr == nil) != (v.Failure == nil) {
					t.Fatalf("failure = %v, want %v", v.Failure, tt.wantErr)
				}
				if v.Decision != tt.want || v.Reason != tt.reason {
					t.Fatalf("got (%q, %q), want (%q, %q)", v.Decision, v.Reason, tt.want, tt.reason)
				}
			})
		}
	}

	// What the ask hook read: Claude Code's input, secure names only, and
	// an environment without the host's secrets.
	b, err := os.ReadFile(stdinFile)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("stdin %s: %v", b, err)
	}
	for k, want := range map[string]any{"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "mcp__orders__delete", "tool_use_id": "c1", "transcript_path": "", "cwd": dir} {
		if in[k] != want {
			t.Errorf("stdin %s = %v, want %v", k, in[k], want)
		}
	}
	if ti, _ := json.Marshal(in["tool_input"]); string(ti) != `{"id":7}` {
		t.Errorf("tool_input = %s", ti)
	}
	if ah, _ := json.Marshal(in["agenthost"]); string(ah) != `{"secureParams":["token"],"server":"orders","tool":"delete"}` {
		t.Errorf("agenthost = %s", ah)
	}
	env, _ := os.ReadFile(envFile)
	if strings.Contains(string(env), "sk-canary-host-secret") {
		t.Error("the host's secret reached the hook's environment")
	}
	if !strings.Contains(string(env), "CLAUDE_PROJECT_DIR="+dir) {
		t.Errorf("CLAUDE_PROJECT_DIR not set: %s", env)
	}
}

// A hook that times out is killed with what it started.
func TestTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	r := newRunner(t, pre(`sleep 30 & echo $! > "`+pidFile+`"; wait`, func(h *Hook) { h.Timeout = 0.3 }), dir)
	if v := r.Pre(context.Background(), call); !errors.Is(v.Failure, ErrTimeout) {
		t.Fatalf("verdict %+v", v)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	stat := "/proc/" + strings.TrimSpace(string(b)) + "/stat"
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return // no /proc here: the kill itself is the same syscall
	}
	for range 100 {
		data, err := os.ReadFile(stat)
		if err != nil {
			return // gone
		}
		if f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return // dead, not yet reaped by its new parent
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the hook's background child is still running")
}

func TestPreCombines(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{PreToolUse: []Group{
		{Matcher: "*", Hooks: []Hook{
			{Type: "command", Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","additionalContext":"one"}}'`, ID: "a"},
			{Type: "command", Command: `echo '{"hookSpecificOutput":{"permissionDecision":"ask","additionalContext":"two"}}'`, ID: "b"},
		}},
		{Matcher: "mcp__orders__delete", Hooks: []Hook{{Type: "command", Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`, ID: "c"}}},
	}}
	v := newRunner(t, cfg, dir).Pre(context.Background(), call)
	if v.Decision != DecisionAsk || v.By != "b" || strings.Join(v.Context, ",") != "one,two" || strings.Join(v.Ran, ",") != "a,b,c" {
		t.Fatalf("verdict = %+v", v)
	}
}

func TestPostRuns(t *testing.T) {
	dir := t.TempDir()
	redact := `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedMCPToolOutput":"[redacted]"}}'`
	seen := filepath.Join(dir, "seen.json")
	tests := []struct {
		name     string
		hooks    []Hook
		withheld bool
		replaced string
		wantErr  error
	}{
		{"replace then see replaced", []Hook{{Type: "command", Command: redact}, {Type: "command", Command: `cat > "` + seen + `"`}}, false, `"[redacted]"`, nil},
		{"block", []Hook{{Type: "command", Command: `echo '{"decision":"block","reason":"pii"}'`}}, true, "", nil},
		{"crash withholds", []Hook{{Type: "command", Command: `kill -9 $$`}}, true, "", ErrFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, Config{PostToolUse: []Group{{Hooks: tt.hooks}}}, dir)
			v := r.Post(context.Background(), call, json.RawMessage(`{"content":[{"type":"text","text":"card 4111"}]}`))
			if !errors.Is(v.Failure, tt.wantErr) || (tt.wantErr == nil) != (v.Failure == nil) {
				t.Fatalf("failure = %v, want %v", v.Failure, tt.wantErr)
			}
			if v.Withheld != tt.withheld || string(v.Replaced) != tt.replaced {
				t.Fatalf("verdict = %+v", v)
			}
		})
	}
	b, _ := os.ReadFile(seen)
	var in struct {
		Event    string          `json:"hook_event_name"`
		Response json.RawMessage `json:"tool_response"`
	}
	if err := json.Unmarshal(b, &in); err != nil || in.Event != "PostToolUse" || string(in.Response) != `"[redacted]"` {
		t.Fatalf("the second hook read %s (%v)", b, err)
	}
}
