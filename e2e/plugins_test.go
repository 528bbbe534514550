//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// ftPluginTools are secure tools whose token comes from a credential
// plugin; several tools so that a session resolves (and caches) the value
// once per tool.
func ftPluginTools(t *testing.T) string {
	t.Helper()
	return writeJSON(t, t.TempDir(), "tools.json", []obj{
		ftSecureTool("a", obj{"text": "a ran"}, "token"),
		ftSecureTool("b", obj{"text": "b ran"}, "token"),
		ftSecureTool("c", obj{"text": "c ran"}, "token"),
		ftSecureTool("unknown_ref", obj{"text": "must not run"}, "token"),
	})
}

// ftPluginConfig binds every tool's token to ref orders/token of source
// vault (unknown_ref to a ref the source does not have).
func ftPluginConfig(t *testing.T, server obj, vault obj, extra obj) string {
	t.Helper()
	cfg := obj{
		"mcpServers": obj{"srv": server},
		"sources":    obj{"vault": vault},
		"bindings": []obj{
			{"server": "srv", "tools": []string{"a", "b", "c"}, "params": obj{"token": obj{"source": "vault", "ref": "orders/token"}}},
			{"server": "srv", "tools": []string{"unknown_ref"}, "params": obj{"token": obj{"source": "vault", "ref": "no/such/ref"}}},
		},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfig(t, cfg)
}

// TestFtPluginCredFile: values come from the cred-file plugin, per tenant
// when the session's subject has an entry, the default otherwise; a ref the
// file does not have is a binding failure and nothing is sent.
func TestFtPluginCredFile(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	secrets := writeFile(t, dir, "secrets.yaml", []byte(`orders/token:
  value: default-token-1
  expiration: 2099-01-01T00:00:00Z
  tenants:
    acme: acme-token-2
`))
	record := filepath.Join(t.TempDir(), "record.jsonl")
	cfg := ftPluginConfig(t, stdioServer(ftPluginTools(t), record),
		ftPluginSource(t, bins.credFile, obj{"path": secrets}), nil)

	for _, c := range []struct {
		subject []string
		want    string
	}{
		{nil, "default-token-1"},
		{[]string{"--subject", "acme"}, "acme-token-2"},
		{[]string{"--subject", "globex"}, "default-token-1"},
	} {
		args := append([]string{"--config", cfg, "call", "srv", "a", "--json"}, c.subject...)
		r := run(t, nil, args...)
		wantCode(t, r, 0)
		if doc := decodeStdout[callDoc](t, r); doc.IsError || doc.text() != "a ran" {
			t.Fatalf("subject %v: want the tool's result\n%s", c.subject, r)
		}
		if got := ftSecureArgs(t, record, "a")["token"]; got != c.want {
			t.Errorf("subject %v: secureArguments token %v, want %q", c.subject, got, c.want)
		}
		wantNoCanary(t, r, c.want)
	}

	r := run(t, nil, "--config", cfg, "call", "srv", "unknown_ref", "--json")
	msg := wantCallError(t, r, 4, "binding")
	if !strings.Contains(msg, "vault") {
		t.Errorf("the binding error does not name the source: %q", msg)
	}
	if _, names := ftToolCalls(t, record); slices.Contains(names, "unknown_ref") {
		t.Errorf("a call whose value could not be resolved reached the server")
	}
}

// TestFtPluginBadConfigAtStart: a plugin config the plugin rejects (a
// misspelt key) is a configuration error at start, for every command and
// before any call: exit 2, one line naming the file, sources.NAME.config
// and the keys, and none of the plugin's debug lines.
func TestFtPluginBadConfigAtStart(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	secrets := writeFile(t, t.TempDir(), "secrets.json", []byte(`{"orders/token": "v"}`))
	record := filepath.Join(t.TempDir(), "record.jsonl")
	cfg := ftPluginConfig(t, stdioServer(ftPluginTools(t), record),
		ftPluginSource(t, bins.credFile, obj{"pathx": secrets}), nil)
	for _, args := range [][]string{
		{"--config", cfg, "servers"},
		{"--config", cfg, "call", "srv", "a"},
	} {
		r := run(t, nil, args...)
		wantCode(t, r, 2)
		msg := strings.TrimSpace(r.stderr)
		for _, want := range []string{filepath.Base(cfg), "sources.vault.config", "missing required key(s) path", "unknown key(s) pathx"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%v: the error does not say %q:\n%s", args[2:], want, r)
			}
		}
		if strings.Contains(msg, "\n") || strings.Contains(msg, "@level") {
			t.Errorf("%v: the error is not one line, or quotes the plugin's log:\n%s", args[2:], r)
		}
	}
	if _, names := ftToolCalls(t, record); len(names) > 0 {
		t.Errorf("a call reached the server although the configuration was refused: %v", names)
	}
}

// TestFtPluginSensitivityIsTheStricter: `sensitivity: public` on a
// binding does not unmask a value its plugin returned as secret (the
// plugin's Source registers it with the redactor as it arrives), so a tool
// that echoes the value shows it masked; the same tool bound to a public
// literal shows it. docs/config.md (bindings) says so.
func TestFtPluginSensitivityIsTheStricter(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	const secret = "plugin-secret-value-81f"
	secrets := writeFile(t, dir, "secrets.json", []byte(`{"orders/token": "`+secret+`"}`))
	tools := writeJSON(t, dir, "tools.json", []obj{ftSecureTool("echo", obj{"echoSecure": true}, "token")})
	for _, c := range []struct {
		name    string
		binding obj
		shown   string
	}{
		{"secret from the plugin, public binding", obj{"source": "vault", "ref": "orders/token", "sensitivity": "public"}, "[REDACTED]"},
		{"public literal", obj{"value": "a-public-literal", "sensitivity": "public"}, "a-public-literal"},
	} {
		cfg := writeConfig(t, obj{
			"mcpServers": obj{"srv": stdioServer(tools, filepath.Join(t.TempDir(), "record.jsonl"))},
			"sources":    obj{"vault": ftPluginSource(t, bins.credFile, obj{"path": secrets})},
			"bindings":   []obj{{"server": "srv", "params": obj{"token": c.binding}}},
		})
		r := run(t, nil, "--config", cfg, "call", "srv", "echo", "--json")
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, `"token":"`+c.shown+`"`) && !strings.Contains(r.stdout, `\"token\":\"`+c.shown+`\"`) {
			t.Errorf("%s: the echoed token is not %q:\n%s", c.name, c.shown, r)
		}
		wantNoCanary(t, r, secret)
	}
}

// TestFtTestServerForPluginAuthors walks the README's "Trying a plugin
// against the test server": agenthost-testserver --example with a plugin
// bound to its secure parameter token; whoami's answer shows the value
// masked, the server's record holds the plugin's value (per subject), and
// an unknown ref says so once.
func TestFtTestServerForPluginAuthors(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	secrets := writeFile(t, dir, "secrets.yaml", []byte("orders/token:\n  value: default-token-5e\n  tenants:\n    acme: acme-token-5e\n"))
	record := filepath.Join(dir, "received.jsonl")
	cfg := func(ref string) string {
		return writeConfig(t, obj{
			"mcpServers": obj{"test": obj{"command": testServerBin, "args": []string{"--example", "--record", record}, "trustAnnotations": true}},
			"sources":    obj{"static": ftPluginSource(t, bins.credFile, obj{"path": secrets})},
			"bindings":   []obj{{"server": "test", "params": obj{"token": obj{"source": "static", "ref": ref}}}},
			"approvals":  obj{"rules": []obj{{"id": "reads", "when": obj{"category": []string{"read"}}, "decide": "allow"}}},
		})
	}
	good := cfg("orders/token")
	r := run(t, nil, "--config", good, "tools")
	wantCode(t, r, 0)
	for _, want := range []string{"test__whoami  [secure: token]  decision: allow", "test__delete_item  [secure: token]  decision: ask"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tools does not list %q:\n%s", want, r)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "default-token-5e"},
		{[]string{"--subject", "acme"}, "acme-token-5e"},
	} {
		r := run(t, nil, append([]string{"--config", good, "call", "test", "whoami"}, c.args...)...)
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, `"secureArguments":{"token":"[REDACTED]"}`) {
			t.Errorf("whoami does not show the token masked:\n%s", r)
		}
		wantNoCanary(t, r, c.want)
		if got := ftSecureArgs(t, record, "whoami")["token"]; got != c.want {
			t.Errorf("%v: the server received token %v, want %q", c.args, got, c.want)
		}
	}
	r = run(t, nil, "--config", cfg("nope"), "call", "test", "whoami")
	wantCode(t, r, 4)
	if !strings.Contains(r.stderr, `plugin static: resolve "nope": unknown ref`) || strings.Contains(r.stderr, "unknown ref: unknown ref") {
		t.Errorf("the unknown ref is not said once:\n%s", r)
	}
}

// TestFtPluginCredExec: the cred-exec plugin runs a command per value with
// the ref as its last argument and only PATH plus the call's scope in its
// environment; what it prints is the value sent.
func TestFtPluginCredExec(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	envDump := filepath.Join(dir, "env.txt")
	script := ftScript(t, dir, "get-token.sh", `env > '`+envDump+`'
printf '{"Version":1,"Value":"exec|%s|%s|%s|%s|%s","Expiration":"2099-01-01T00:00:00Z"}' \
  "$1" "$AGENTHOST_SUBJECT" "$AGENTHOST_SERVER" "$AGENTHOST_TOOL" "$AGENTHOST_PARAM"
`)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	cfg := ftPluginConfig(t, stdioServer(ftPluginTools(t), record),
		ftPluginSource(t, bins.credExec, obj{"command": []string{script}, "timeout": "5s"}), nil)

	r := run(t, []string{"FT_HOST_ONLY_SECRET=must-not-reach-plugins"},
		"--config", cfg, "call", "srv", "b", "--subject", "acme", "--session-id", "ft-session-1", "--json")
	wantCode(t, r, 0)
	want := "exec|orders/token|acme|srv|b|token"
	if got := ftSecureArgs(t, record, "b")["token"]; got != want {
		t.Errorf("secureArguments token %v, want %q", got, want)
	}
	wantNoCanary(t, r, want)

	data, err := os.ReadFile(envDump)
	if err != nil {
		t.Fatalf("the command never ran: %v", err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	if env["AGENTHOST_SESSION_ID"] != "ft-session-1" || env["AGENTHOST_SUBJECT"] != "acme" || env["PATH"] == "" {
		t.Errorf("the command's environment lacks the call's scope or PATH: %v", env)
	}
	// The shell itself adds PWD (and some shells SHLVL and _).
	allowed := []string{"PATH", "PWD", "SHLVL", "_", "AGENTHOST_SESSION_ID", "AGENTHOST_SUBJECT",
		"AGENTHOST_SERVER", "AGENTHOST_TOOL", "AGENTHOST_PARAM"}
	for k := range env {
		if !slices.Contains(allowed, k) {
			t.Errorf("the command inherited %s", k)
		}
	}
}

// TestFtPluginChecksumMismatch: a plugin whose file does not match its pin
// is a configuration error naming sources.NAME, and the file never runs.
// The plugin is a script that leaves a marker and then becomes cred-file;
// with the right pin the same script runs and serves the value.
func TestFtPluginChecksumMismatch(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "plugin-ran")
	plugin := ftScript(t, dir, "vault-plugin", "touch '"+marker+"'\nexec '"+bins.credFile+"' \"$@\"\n")
	secrets := writeFile(t, dir, "secrets.json", []byte(`{"orders/token": "pinned-value"}`))
	record := filepath.Join(t.TempDir(), "record.jsonl")
	server := stdioServer(ftPluginTools(t), record)

	wrong := obj{"plugin": plugin, "sha256": ftSHA256(t, bins.credFile), "config": obj{"path": secrets}}
	cfg := ftPluginConfig(t, server, wrong, nil)
	for _, args := range [][]string{
		{"--config", cfg, "call", "srv", "a", "--json"},
		{"--config", cfg, "servers"},
		{"--config", cfg, "tools", "--json"},
	} {
		r := run(t, nil, args...)
		wantCode(t, r, 2)
		out := r.stdout + r.stderr
		if !strings.Contains(out, "sources.vault") {
			t.Errorf("the error does not name sources.vault\n%s", r)
		}
		if !strings.Contains(out, filepath.Base(cfg)) {
			t.Errorf("the configuration error does not name the config file %s\n%s", filepath.Base(cfg), r)
		}
		if args[2] == "call" {
			wantCallError(t, r, 2, "config")
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the plugin ran although its checksum did not match the pin")
	}
	if _, names := ftToolCalls(t, record); len(names) > 0 {
		t.Errorf("a call reached the server although the configuration was refused: %v", names)
	}

	// The control: pinned to its real checksum, the same file runs.
	cfg = ftPluginConfig(t, server, ftPluginSource(t, plugin, obj{"path": secrets}), nil)
	r := run(t, nil, "--config", cfg, "call", "srv", "a", "--json")
	wantCode(t, r, 0)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the correctly pinned plugin did not run: %v", err)
	}
	if got := ftSecureArgs(t, record, "a")["token"]; got != "pinned-value" {
		t.Errorf("secureArguments token %v, want pinned-value", got)
	}
}

// TestFtPluginKilledBetweenCalls: the plugin processes are killed between
// two steps of a run session. The next values are served by restarted
// plugins, or those calls fail cleanly as binding failures; the session
// carries on and a later call succeeds. Never a hang or a crash, and a
// plugin's death takes nothing else with it: the stdio MCP servers, started
// before the plugins, must all survive. (Three plugins and six servers make
// a collateral kill through a shared OS thread likely to show.)
func TestFtPluginKilledBetweenCalls(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	secrets := writeFile(t, t.TempDir(), "secrets.json", []byte(`{"orders/token": "file-token"}`))
	tools := ftPluginTools(t)
	const servers, plugins = 6, 3
	entries, records, sources := obj{}, map[string]string{}, obj{}
	var bindings []obj
	var first, afterKill []modeltest.ToolCall
	for i := 1; i <= servers; i++ {
		name := fmt.Sprintf("s%d", i)
		records[name] = filepath.Join(t.TempDir(), "record.jsonl")
		entries[name] = stdioServer(tools, records[name])
		source := fmt.Sprintf("vault%d", (i-1)%plugins+1)
		bindings = append(bindings, obj{"server": name, "params": obj{"token": obj{"source": source, "ref": "orders/token"}}})
		if i <= plugins {
			first = append(first, ftCall(name+"__a", `{"n":0}`))
		}
		afterKill = append(afterKill, ftCall(name+"__b", fmt.Sprintf(`{"n":%d}`, i)))
	}
	for i := 1; i <= plugins; i++ {
		sources[fmt.Sprintf("vault%d", i)] = ftPluginSource(t, bins.credFile, obj{"path": secrets})
	}
	model := ftStartModel(t, modeltest.Script{
		ftCalls(first...),
		// The test kills the plugins while the model "thinks".
		{ToolCalls: afterKill, Delay: 1500 * time.Millisecond},
		{ToolCalls: []modeltest.ToolCall{ftCall("s1__c", `{"n":9}`)}, Delay: 300 * time.Millisecond},
		{Text: "finished"},
	})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": entries, "sources": sources, "bindings": bindings})

	p := ftStart(t, nil, "--config", cfg, "--log-level", "debug", "run", "use the tools", "--output-format", "agenthost-stream-json")
	waitFor(t, 15*time.Second, "the first calls to reach the servers", func() bool {
		for i := 1; i <= plugins; i++ {
			if _, names := ftToolCalls(t, records[fmt.Sprintf("s%d", i)]); !slices.Contains(names, "a") && !p.exited() {
				return false
			}
		}
		// A plugin's log lines (its pid among them) are released once its
		// first call is done, a moment after the value went out.
		return len(ftPluginPIDs(p.stderr.String())) >= plugins || p.exited()
	})
	pids := ftPluginPIDs(p.stderr.String())
	if len(pids) != plugins {
		t.Fatalf("want %d plugins started before the first calls, found pids %v\n%s", plugins, pids, p.result())
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing a plugin (pid %d): %v", pid, err)
		}
	}

	r := p.wait(t, 20*time.Second)
	wantCode(t, r, 0)
	s := ftParseSession(t, r)
	if end := s.end(t); end.Reason != "done" {
		t.Fatalf("session ended %q, want done\n%s", end.Reason, r)
	}
	for j := range first {
		if s.failed(t, ftCallID(0, j)) {
			t.Fatalf("a call before the kill failed\n%s", r)
		}
	}
	for i := 1; i <= servers; i++ {
		name := fmt.Sprintf("s%d", i)
		if n := ftConnects(t, records[name]); n != 1 {
			t.Errorf("MCP server %s was connected %d times, want once: a credential plugin's death killed it", name, n)
		}
		call := ftCallID(1, i-1)
		if !s.failed(t, call) {
			continue
		}
		e, ok := s.errorOf(call)
		if !ok || e.Kind != "binding" {
			t.Errorf("%s__b after the kill failed, but not as a binding failure (error event %+v)", name, e)
		} else {
			t.Logf("%s__b right after the kill failed cleanly: %s", name, e.Error)
		}
	}
	if s.failed(t, ftCallID(2, 0)) {
		t.Fatalf("the plugin was not restarted: the last call failed\n%s", r)
	}
	if got := ftSecureArgs(t, records["s1"], "c")["token"]; got != "file-token" {
		t.Errorf("after the restart: token %v, want file-token", got)
	}
	if pids := ftPluginPIDs(r.stderr); len(pids) != 2*plugins {
		t.Errorf("want each plugin started twice (before and after the kill), got pids %v", pids)
	}
	model.wantNoFailures(t)
}

// TestFtPluginKilledDuringResolve: the cred-exec command kills its own
// plugin in the middle of the second Resolve. That call fails cleanly as a
// binding failure (or is retried on a restarted plugin); the session goes
// on and the next call gets its value from a restarted plugin.
func TestFtPluginKilledDuringResolve(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	dir := t.TempDir()
	counter := filepath.Join(dir, "count")
	script := ftScript(t, dir, "get-token.sh", `n=$(cat '`+counter+`' 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > '`+counter+`'
if [ "$n" = 2 ]; then
  kill -9 "$PPID"
  sleep 5
fi
printf '{"Version":1,"Value":"exec-%s"}' "$AGENTHOST_TOOL"
`)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	model := ftStartModel(t, modeltest.Script{
		ftCalls(ftCall("srv__a", `{"n":1}`)),
		ftCalls(ftCall("srv__b", `{"n":2}`)),
		{ToolCalls: []modeltest.ToolCall{ftCall("srv__c", `{"n":3}`)}, Delay: 300 * time.Millisecond},
		{Text: "finished"},
	})
	cfg := ftPluginConfig(t, stdioServer(ftPluginTools(t), record),
		ftPluginSource(t, bins.credExec, obj{"command": []string{script}}), obj{"llm": model.llm()})

	r := runWithTimeout(t, 25*time.Second, nil, "--config", cfg, "run", "use the tools", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 0)
	s := ftParseSession(t, r)
	if end := s.end(t); end.Reason != "done" {
		t.Fatalf("session ended %q, want done\n%s", end.Reason, r)
	}
	if s.failed(t, ftCallID(0, 0)) {
		t.Fatalf("the first call failed\n%s", r)
	}
	if n := ftConnects(t, record); n != 1 {
		t.Errorf("the MCP server was connected %d times, want once: the plugin's death took the stdio MCP server with it", n)
	}
	_, names := ftToolCalls(t, record)
	if s.failed(t, ftCallID(1, 0)) {
		e, ok := s.errorOf(ftCallID(1, 0))
		if !ok || e.Kind != "binding" {
			t.Errorf("the call whose plugin died failed, but not as a binding failure (error event %+v)\n%s", e, r)
		}
		if slices.Contains(names, "b") {
			t.Errorf("the call whose value was never resolved reached the server")
		}
	}
	if s.failed(t, ftCallID(2, 0)) {
		t.Fatalf("the plugin was not restarted: the last call failed\n%s", r)
	}
	if got := ftSecureArgs(t, record, "c")["token"]; got != "exec-c" {
		t.Errorf("after the restart: token %v, want exec-c", got)
	}
	model.wantNoFailures(t)
}
