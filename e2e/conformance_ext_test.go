package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The extension scenarios of the next conformance suite (pinned in
// e2e/peers as conformance-next, beside the released one): the OAuth
// client extensions, run like the other client scenarios (runConformance)
// against agenthost's CLI. A scenario either runs in
// conformanceExtScenarios or is listed in conformanceExtNotRun with the
// reason; TestConformanceExtensionList fails on a scenario in neither.

// conformanceExtScenarios are the client extension scenarios agenthost
// runs. Each expects its own checks plus valid-bearer-token where the MCP
// server checks the token with the suite's bearer verifier (the DPoP
// scenarios' server checks the proof instead).
var conformanceExtScenarios = []conformanceScenario{
	// The client credentials grant, with the client from
	// MCP_CONFORMANCE_CONTEXT.
	authScenario("auth/client-credentials-jwt", "client-credentials-jwt-verified", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=client_credentials", "AGENTHOST_OAUTH_TOKEN_ENDPOINT_AUTH_METHOD=private_key_jwt"),
	authScenario("auth/client-credentials-basic", "client-credentials-basic-auth", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=client_credentials"),
	// Enterprise-managed authorization (SEP-990): the ID token, the
	// identity provider and both clients from MCP_CONFORMANCE_CONTEXT.
	authScenario("auth/enterprise-managed-authorization", "complete-flow-token-exchange", "complete-flow-jwt-bearer", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=id-jag"),
	// DPoP (SEP-1932, RFC 9449): the authorization server advertises
	// ES256 proofs, so oauth.dpop's default (auto) asks for a DPoP-bound
	// token at the login's token request and presents it with the DPoP
	// scheme and a fresh proof per request.
	authScenario("auth/dpop", "sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof"),
	// Both servers demand a nonce of their own (use_dpop_nonce); the
	// client retries each request once with it. dpop: required, so that a
	// token issued without the proof fails the scenario.
	authScenario("auth/dpop-nonce", "sep-1932-client-token-request-proof", "sep-1932-client-dpop-auth-scheme", "sep-1932-client-fresh-proof",
		"sep-1932-client-as-nonce", "sep-1932-client-rs-nonce").
		with("AGENTHOST_OAUTH_DPOP=required"),
	// Workload identity federation (SEP-1933): the workload's JWT
	// (valid_jwt of MCP_CONFORMANCE_CONTEXT, which confclient puts in a
	// file as a platform would) with the JWT bearer grant. The scenario
	// warns (wif-no-retry, wif-grant-fallback) on any second token request
	// after a failure, which checkConformance fails on.
	authScenario("auth/wif-jwt-bearer", "wif-assertion-verified", "valid-bearer-token").
		with("AGENTHOST_OAUTH_GRANT=jwt-bearer"),
}

// TestConformanceWIFRefusal runs auth/wif-jwt-bearer with the scopes its
// authorization server refuses (unauthorized_client, invalid_scope):
// agenthost fails the call (exit 8) after the one token request, without a
// retry (wif-no-retry) or another grant (wif-grant-fallback), both warnings
// that checkConformance fails on.
func TestConformanceWIFRefusal(t *testing.T) {
	t.Parallel()
	node, suite := conformanceNextSuite(t)
	for _, scope := range []string{"wif.trigger-unauthorized", "wif.rejected"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			sc := authScenario("auth/wif-jwt-bearer", "wif-assertion-verified", "token-request").
				with("AGENTHOST_OAUTH_GRANT=jwt-bearer", "AGENTHOST_OAUTH_SCOPES="+scope)
			sc.clientFails = true
			checkConformance(t, node, suite, sc)
		})
	}
}

// conformanceExtNotRun are the client extension scenarios of the next suite
// that agenthost does not run, with the reason.
var conformanceExtNotRun = map[string]string{
	"sep-2640-client-no-prefetch":        skillsNotImplemented,
	"sep-2640-client-verify-digest":      skillsNotImplemented,
	"sep-2640-client-verify-size":        skillsNotImplemented,
	"sep-2640-client-verify-frontmatter": skillsNotImplemented,
}

const skillsNotImplemented = "the skills extension (SEP-2640, io.modelcontextprotocol/skills) is not implemented: agenthost lists and loads no skills, so there is nothing of its to judge"

// conformanceNextSuite returns the Node.js binary and the entry point of
// the next suite (conformance-next in e2e/peers, installed by `make
// peers`); the test fails when it is missing.
func conformanceNextSuite(t *testing.T) (node, suite string) {
	t.Helper()
	node, _ = conformanceSuite(t)
	suite = filepath.Join(moduleRoot, "e2e", "peers", "node_modules", "conformance-next", "dist", "index.js")
	if _, err := os.Stat(suite); err != nil {
		t.Fatalf("conformance-next (the npm package @modelcontextprotocol/conformance, next version) is not installed (%v): run `make peers`", err)
	}
	return node, suite
}

// TestConformanceClientExtensions runs every scenario of
// conformanceExtScenarios through the next suite and fails on any failed
// check, any warning, a client that exits non-zero or times out, and a
// missing expected check.
func TestConformanceClientExtensions(t *testing.T) {
	t.Parallel()
	node, suite := conformanceNextSuite(t)
	for _, sc := range conformanceExtScenarios {
		t.Run(strings.ReplaceAll(sc.name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			checkConformance(t, node, suite, sc)
		})
	}
}

// TestConformanceExtensionList checks that the tables above cover exactly
// the client extension scenarios the next suite lists.
func TestConformanceExtensionList(t *testing.T) {
	t.Parallel()
	node, suite := conformanceNextSuite(t)
	checkScenarioList(t, node, suite, parseExtensionScenarios, conformanceExtScenarios, conformanceExtNotRun)
}

// extensionLine is a line of `conformance list` naming an extension
// scenario: "  - name [extension]".
var extensionLine = regexp.MustCompile(`^\s*-\s+(\S+)\s+\[extension\]\s*$`)

// parseExtensionScenarios reads the extension scenarios from `conformance
// list --client` output.
func parseExtensionScenarios(out string) []string { return listedNames(out, extensionLine) }

func TestParseExtensionScenarios(t *testing.T) {
	got := parseExtensionScenarios("Client scenarios:\n  - initialize [2025-06-18]\n  - auth/dpop [extension]\n  - auth/wif-jwt-bearer [extension]\n")
	if want := []string{"auth/dpop", "auth/wif-jwt-bearer"}; !slices.Equal(got, want) {
		t.Errorf("parseExtensionScenarios = %q, want %q", got, want)
	}
}
