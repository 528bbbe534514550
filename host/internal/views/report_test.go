package views

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/bindings"
)

const canary = "CANARY-7f3a9c-instance"

// TestReportWarningsMasked: definition warnings quote schema names, which
// a server may have filled with a protected value; the report masks them
// without touching the catalog's copy.
func TestReportWarningsMasked(t *testing.T) {
	r := bindings.NewRedactor()
	r.Add(canary)
	orig := []string{"property " + canary + " looks like a secure parameter", "clean"}
	got := redactAll(r, orig)
	if strings.Contains(strings.Join(got, " "), canary) || got[1] != "clean" {
		t.Errorf("redactAll = %q", got)
	}
	if !strings.Contains(orig[0], canary) {
		t.Error("the catalog's warnings were modified")
	}
	clean := []string{"a", "b"}
	if out := redactAll(r, clean); &out[0] != &clean[0] {
		t.Error("a clean list was copied")
	}
}
