package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The client extension scenarios of 0.2.0-alpha.12 (conformance-next):
// those of its 2026-07-28 requirement set run in conformanceScenarios2026;
// `conformance list --client` lists more extensions than the set holds,
// and TestConformanceExtensionList fails on one that is neither run there
// nor listed in conformanceExtNotRun with the reason.

// conformanceExtNotRun are the client extension scenarios of 0.2.0-alpha.12
// outside its requirement set that agenthost does not run, with the reason.
var conformanceExtNotRun = map[string]string{
	"sep-2640-client-no-prefetch":        skillsNotImplemented,
	"sep-2640-client-verify-digest":      skillsNotImplemented,
	"sep-2640-client-verify-size":        skillsNotImplemented,
	"sep-2640-client-verify-frontmatter": skillsNotImplemented,
}

const skillsNotImplemented = "the skills extension (SEP-2640, io.modelcontextprotocol/skills) is not implemented: agenthost lists and loads no skills, so there is nothing of its to judge"

// release2026 is the pinned release whose requirement set is 2026-07-28.
func release2026(t *testing.T) conformanceRelease {
	t.Helper()
	for _, rel := range conformanceReleases {
		if rel.requirements == "2026-07-28" {
			return rel
		}
	}
	t.Fatal("no pinned release runs the 2026-07-28 requirement set")
	return conformanceRelease{}
}

// TestConformanceWIFRefusal runs auth/wif-jwt-bearer with the scopes its
// authorization server refuses (unauthorized_client, invalid_scope):
// agenthost fails the call (exit 8) after the one token request, without a
// retry (wif-no-retry) or another grant (wif-grant-fallback), both warnings
// that checkConformance fails on.
func TestConformanceWIFRefusal(t *testing.T) {
	t.Parallel()
	rel := release2026(t)
	node, suite := conformanceSuite(t, rel)
	for _, scope := range []string{"wif.trigger-unauthorized", "wif.rejected"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			sc := authScenario("auth/wif-jwt-bearer", "wif-assertion-verified", "token-request").
				with("AGENTHOST_OAUTH_GRANT=jwt-bearer", "AGENTHOST_OAUTH_SCOPES="+scope)
			sc.clientFails = true
			checkConformance(t, node, suite, rel, sc)
		})
	}
}

// TestConformanceExtensionList checks that every client extension scenario
// `conformance list --client` lists is run (conformanceScenarios2026) or
// not run with a reason (conformanceExtNotRun).
func TestConformanceExtensionList(t *testing.T) {
	t.Parallel()
	rel := release2026(t)
	node, suite := conformanceSuite(t, rel)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "list", "--client")
	cmd.Env = baseEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --client: %v\n%s", err, out)
	}
	listed := parseExtensionScenarios(string(out))
	if len(listed) == 0 {
		t.Fatalf("conformance list --client listed no extension scenario:\n%s", out)
	}
	for _, name := range listed {
		_, notRun := conformanceExtNotRun[name]
		run := slices.ContainsFunc(rel.scenarios, func(sc conformanceScenario) bool { return sc.name == name })
		switch {
		case run && notRun:
			t.Errorf("extension scenario %s is both run and not run", name)
		case !run && !notRun:
			t.Errorf("the suite lists client extension scenario %s, which neither conformanceScenarios2026 nor conformanceExtNotRun names", name)
		}
	}
	for name := range conformanceExtNotRun {
		if !slices.Contains(listed, name) {
			t.Errorf("scenario %s is not listed as a client extension scenario by the suite", name)
		}
	}
}

// extensionLine is a line of `conformance list` naming an extension
// scenario: "  - name [extension]".
var extensionLine = regexp.MustCompile(`^\s*-\s+(\S+)\s+\[extension\]\s*$`)

// parseExtensionScenarios reads the extension scenarios from `conformance
// list --client` output.
func parseExtensionScenarios(out string) []string {
	var names []string
	for line := range strings.Lines(out) {
		if m := extensionLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

func TestParseExtensionScenarios(t *testing.T) {
	got := parseExtensionScenarios("Client scenarios:\n  - initialize [2025-06-18]\n  - auth/dpop [extension]\n  - auth/wif-jwt-bearer [extension]\n")
	if want := []string{"auth/dpop", "auth/wif-jwt-bearer"}; !slices.Equal(got, want) {
		t.Errorf("parseExtensionScenarios = %q, want %q", got, want)
	}
}
