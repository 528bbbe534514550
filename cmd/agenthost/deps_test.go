package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestKits: the binary links no test kit of this module
// (host/mcptest, host/modeltest), no package of this module imports
// testing, and nothing at all links net/http/httptest. (A dependency may
// import testing for helpers of its own: go-plugin does.) The SQLite engine
// (modernc.org/sqlite) is linked on purpose: it is the embedded approvals
// and audit store (approvals.store: sqlite:PATH).
func TestBinaryLinksNoTestKits(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/agenthost/agenthost"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		switch pkg {
		case "net/http/httptest", module + "/host/mcptest", module + "/host/modeltest":
			t.Errorf("the binary links %s", pkg)
		}
		if !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		for _, imp := range imports {
			if imp == "testing" || imp == "net/http/httptest" {
				t.Errorf("%s (in the binary) imports %s", pkg, imp)
			}
		}
	}
}
