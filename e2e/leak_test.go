//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// ftLeakParams are the secure parameters of the leak suite's tools, one per
// kind of binding.
var ftLeakParams = []string{"p_value", "p_env", "p_file", "p_session", "p_credfile", "p_credexec"}

// ftLeakSetup is a server whose tools take a value from every kind of
// binding, and the canaries behind them.
type ftLeakSetup struct {
	canaries map[string]string // kind -> canary
	tools    string
	record   string
	sources  obj
	bindings []obj
	env      []string // host environment for agenthost
	bind     []string // --bind flags
}

func ftNewLeakSetup(t *testing.T) *ftLeakSetup {
	t.Helper()
	bins := ftBins(t)
	dir := t.TempDir()
	c := map[string]string{}
	for _, kind := range []string{"value", "env", "file", "session", "credfile", "credexec", "apikey"} {
		c[kind] = newCanary(t, kind)
	}
	secretFile := writeFile(t, dir, "token.txt", []byte(c["file"]+"\n"))
	vaultFile := writeJSON(t, dir, "vault.json", obj{"leak/token": c["credfile"]})
	// The command also writes the value to its stderr, which must never be
	// logged.
	execScript := ftScript(t, dir, "get-secret.sh", `echo "debugging: value is `+c["credexec"]+`" >&2
printf '{"Version":1,"Value":"%s","Expiration":"2099-01-01T00:00:00Z"}' '`+c["credexec"]+`'
`)
	all := ftLeakParams
	everyCanary := strings.Join([]string{c["value"], c["env"], c["file"], c["session"], c["credfile"], c["credexec"]}, " ")
	tools := writeJSON(t, dir, "tools.json", []obj{
		ftSecureTool("ok", obj{"text": "ok ran"}, all...),
		ftSecureTool("echo", obj{"echoSecure": true}, all...),
		// A tool error whose text echoes the values.
		ftSecureTool("echo_error", obj{"isError": true, "echoSecure": true, "text": "denied for"}, all...),
		// A server whose JSON-RPC error message quotes the values.
		ftSecureTool("server_error", obj{"errorCode": -32603, "errorMessage": "bad credentials: " + everyCanary}, all...),
		{
			"name": "pattern", "inputSchema": obj{"type": "object"},
			"secureInputSchema": obj{"type": "object", "required": []string{"p_value"}, "properties": obj{
				"p_value": obj{"type": "string", "pattern": "^x$"},
			}},
		},
	})
	return &ftLeakSetup{
		canaries: c,
		tools:    tools,
		record:   filepath.Join(t.TempDir(), "record.jsonl"),
		sources: obj{
			"vaultfile": ftPluginSource(t, bins.credFile, obj{"path": vaultFile}),
			"vaultexec": ftPluginSource(t, bins.credExec, obj{"command": []string{execScript}}),
		},
		bindings: []obj{{"server": "srv", "params": obj{
			"p_value":    obj{"value": c["value"]},
			"p_env":      obj{"env": "FT_LEAK_ENV_SECRET"},
			"p_file":     obj{"file": secretFile},
			"p_session":  obj{"session": "sess"},
			"p_credfile": obj{"source": "vaultfile", "ref": "leak/token"},
			"p_credexec": obj{"source": "vaultexec", "ref": "leak/exec"},
		}}},
		env:  []string{"FT_LEAK_ENV_SECRET=" + c["env"], "FT_LEAK_API_KEY=" + c["apikey"]},
		bind: []string{"--bind", "sess=" + c["session"]},
	}
}

// config writes a config for the setup; model may be nil.
func (l *ftLeakSetup) config(t *testing.T, model *ftModel) (cfg, audit string) {
	t.Helper()
	audit = filepath.Join(t.TempDir(), "audit.jsonl")
	c := obj{
		"mcpServers": obj{"srv": stdioServer(l.tools, l.record, "--stderr-noise")},
		"sources":    l.sources,
		"bindings":   l.bindings,
		"audit":      obj{"path": audit},
	}
	if model != nil {
		llm := model.llm()
		llm["apiKey"] = "${FT_LEAK_API_KEY}"
		c["llm"] = llm
	}
	return writeConfig(t, c), audit
}

// wantClean checks a run's stdout and stderr.
func (l *ftLeakSetup) wantClean(t *testing.T, r result) {
	t.Helper()
	ftWantAbsent(t, "stdout of "+strings.Join(r.args, " "), r.stdout, l.canaries)
	ftWantAbsent(t, "stderr of "+strings.Join(r.args, " "), r.stderr, l.canaries)
}

// wantAuditClean checks an audit file that must exist.
func (l *ftLeakSetup) wantAuditClean(t *testing.T, audit string) {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil || len(data) == 0 {
		t.Fatalf("no audit records were written (%v): the check proves nothing", err)
	}
	ftWantAbsent(t, "the audit log", string(data), l.canaries)
}

// wantDelivered proves the values were really sent to the server.
func (l *ftLeakSetup) wantDelivered(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(l.record)
	if err != nil {
		t.Fatal(err)
	}
	for kind, c := range l.canaries {
		if kind != "apikey" && !strings.Contains(string(data), c) {
			t.Errorf("the %s value never reached the server: the leak checks prove nothing", kind)
		}
	}
}

// ftLeakScript makes the model call every tool: plain, echoing, failing in
// three ways, an injection attempt, and two calls at once.
func ftLeakScript() modeltest.Script {
	return modeltest.Script{
		ftCalls(ftCall("srv__ok", `{"n":1}`)),
		ftCalls(ftCall("srv__echo", `{"n":2}`)),
		ftCalls(ftCall("srv__echo_error", `{"n":3}`)),
		ftCalls(ftCall("srv__server_error", `{"n":4}`)),
		ftCalls(ftCall("srv__pattern", `{}`)),
		ftCalls(ftCall("srv__ok", `{"n":5,"p_credexec":"guess","P-Value":"guess"}`)),
		ftCalls(ftCall("srv__echo", `{"n":6}`), ftCall("srv__echo_error", `{"n":7}`)),
		{Text: "all done"},
	}
}

// TestFtLeakSessions: complete agent sessions at debug log level, in every
// output format, with values from every kind of binding echoed back and
// quoted in errors: no value reaches the model, stdout, stderr or the audit
// log.
func TestFtLeakSessions(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"stream-json", "json", "text"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			l := ftNewLeakSetup(t)
			model := ftStartModel(t, ftLeakScript())
			cfg, audit := l.config(t, model)
			args := append([]string{"--config", cfg, "--log-level", "debug", "run", "use every tool", "--output-format", format}, l.bind...)
			r := runWithTimeout(t, 30*time.Second, l.env, args...)
			wantCode(t, r, 0)
			if format == "stream-json" {
				s := ftParseSession(t, r)
				if end := s.end(t); end.Reason != "done" || end.Steps != 8 {
					t.Fatalf("session ended %q after %d steps, want done after 8\n%s", end.Reason, end.Steps, r)
				}
				// The echo came back, masked.
				if echo := s.result(t, ftCallID(1, 0)).text(); !strings.Contains(echo, "secureArguments") || strings.Count(echo, "[REDACTED]") < len(ftLeakParams) {
					t.Errorf("want the server's echo with every value masked, got %q", echo)
				}
			}
			l.wantClean(t, r)
			l.wantAuditClean(t, audit)
			rec := model.recording(t)
			if len(rec) != 8 {
				t.Fatalf("the model got %d requests, want 8", len(rec))
			}
			ftWantAbsent(t, "the requests to the model", rec.AllText(), l.canaries)
			model.wantNoFailures(t)
			l.wantDelivered(t)
		})
	}
}

// TestFtLeakCommands: the inspection commands and one-off calls, at debug
// log level, print no value either.
func TestFtLeakCommands(t *testing.T) {
	t.Parallel()
	l := ftNewLeakSetup(t)
	cfg, audit := l.config(t, nil)
	common := []string{"--config", cfg, "--log-level", "debug"}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"servers", "--json"}, 0},
		{[]string{"servers"}, 0},
		{append([]string{"tools", "--json"}, l.bind...), 0},
		{append([]string{"tools"}, l.bind...), 0},
		{append([]string{"policy", "explain", "srv", "echo", "--json"}, l.bind...), 0},
		{append([]string{"policy", "explain", "srv", "ok"}, l.bind...), 0},
		{append([]string{"call", "srv", "ok", "--json"}, l.bind...), 0},
		{append([]string{"call", "srv", "echo", "--json"}, l.bind...), 0},
		{append([]string{"call", "srv", "echo"}, l.bind...), 0},
		{append([]string{"call", "srv", "echo_error", "--json"}, l.bind...), 5},
		{append([]string{"call", "srv", "echo_error"}, l.bind...), 5},
		{append([]string{"call", "srv", "server_error", "--json"}, l.bind...), 5},
		{append([]string{"call", "srv", "server_error"}, l.bind...), 5},
		{append([]string{"call", "srv", "pattern", "--json"}, l.bind...), 4},
		{append([]string{"call", "srv", "ok", "--args", `{"p_file":"guess"}`, "--json"}, l.bind...), 4},
	} {
		r := run(t, l.env, append(append([]string{}, common...), c.args...)...)
		if r.code != c.code {
			t.Errorf("exit code %d, want %d\n%s", r.code, c.code, r)
		}
		l.wantClean(t, r)
	}
	l.wantAuditClean(t, audit)
	l.wantDelivered(t)
}
