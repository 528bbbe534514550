package secureparams

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fixture the tests use is the package's own copy in testdata, so the
// suite passes on a clone with nothing beside it. Where the project's shared
// fixture happens to sit next to the repository (a developer's checkout),
// TestFixtureCopyMatchesShared also checks that the copy has not drifted.
var (
	fixtureCopy   = filepath.Join("testdata", "secure_params_tools.json")
	fixtureShared = filepath.Join("..", "..", "..", "shared", "fixtures", "secure_params_tools.json")
)

type fixtureFile struct {
	Tools []fixtureTool `json:"tools"`
}

type fixtureTool struct {
	ID     string          `json:"id"`
	Expect string          `json:"expect"`
	Why    string          `json:"why"`
	Tool   json.RawMessage `json:"tool"`
}

// fixtureRules pins the rule behind each known fixture decision, so that a
// rejection for the wrong reason fails too.
var fixtureRules = map[string]Rule{
	"overlap_top_level":                   RuleOverlap,
	"overlap_only_in_required":            RuleOverlap,
	"overlap_hidden_in_allOf":             RuleOverlap,
	"overlap_hidden_behind_local_ref":     RuleOverlap,
	"overlap_patternProperties":           RuleOverlap,
	"inputSchema_external_ref":            RuleExternalRef,
	"secure_root_array":                   RuleSecureRoot,
	"secure_root_missing_type":            RuleSecureRoot,
	"secure_schema_null":                  RuleSecureRoot,
	"secure_schema_boolean":               RuleSecureRoot,
	"secure_required_without_property":    RuleSecureUndeclared,
	"xmcpheader_on_secure_number":         RuleHeader,
	"xmcpheader_duplicate_across_schemas": RuleHeader,
	"xmcpheader_secure_invalid_name":      RuleHeader,
}

func readFixture(t *testing.T, path string) fixtureFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	var f fixtureFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decoding fixture %s: %v", path, err)
	}
	if len(f.Tools) == 0 {
		t.Fatalf("fixture %s has no tools", path)
	}
	return f
}

func TestFixtureDecisions(t *testing.T) {
	for _, fx := range readFixture(t, fixtureCopy).Tools {
		t.Run(fx.ID, func(t *testing.T) { checkFixture(t, fx) })
	}
}

func checkFixture(t *testing.T, fx fixtureTool) {
	tool, err := ParseTool(fx.Tool)
	if err != nil {
		t.Fatalf("ParseTool: %v", err)
	}
	err = Validate(tool)
	switch fx.Expect {
	case "accept":
		if err != nil {
			t.Fatalf("want accepted, got %v", err)
		}
	case "accept (warn)":
		if err != nil {
			t.Fatalf("want accepted with a warning, got %v", err)
		}
		if len(tool.Warnings) == 0 {
			t.Fatalf("want a warning, got none")
		}
	case "reject", "reject-recommended":
		var ex *ExclusionError
		if !errors.As(err, &ex) {
			t.Fatalf("want *ExclusionError, got %v", err)
		}
		if ex.Tool != tool.Name || ex.Reason == "" {
			t.Fatalf("exclusion lacks tool or reason: %+v", ex)
		}
		if want, ok := fixtureRules[fx.ID]; ok && ex.Rule != want {
			t.Fatalf("excluded by rule %q (%s), want %q", ex.Rule, ex.Reason, want)
		}
	default:
		t.Fatalf("unknown expect %q", fx.Expect)
	}
}

func TestFixtureCopyMatchesShared(t *testing.T) {
	if _, err := os.Stat(fixtureShared); err != nil {
		t.Skipf("no shared fixture beside the repository (%v): the testdata copy is the fixture", err)
	}
	local, shared := readFixture(t, fixtureCopy), readFixture(t, fixtureShared)
	if diff := cmp.Diff(shared, local); diff != "" {
		t.Fatalf("testdata copy differs from the shared fixture; refresh it (-shared +copy):\n%s", diff)
	}
}

// The fixture's own commentary gives specifics beyond accept/reject.
func TestFixtureDetails(t *testing.T) {
	f := readFixture(t, fixtureCopy)
	byID := map[string]*Tool{}
	for _, fx := range f.Tools {
		tool, err := ParseTool(fx.Tool)
		if err != nil {
			t.Fatalf("%s: %v", fx.ID, err)
		}
		byID[fx.ID] = tool
	}
	mustGet := func(id string) *Tool {
		t.Helper()
		tool, ok := byID[id]
		if !ok {
			t.Fatalf("fixture %s missing", id)
		}
		return tool
	}

	sep := mustGet("valid_sep_example")
	if diff := cmp.Diff([]string{"instance", "project_id", "session_token"}, sep.SecureParams); diff != "" {
		t.Errorf("SecureParams (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"instance", "project_id"}, sep.SecureRequired); diff != "" {
		t.Errorf("SecureRequired (-want +got):\n%s", diff)
	}

	routed := mustGet("xmcpheader_on_secure_string")
	if diff := cmp.Diff([]HeaderBinding{{Param: "region", Header: "Mcp-Param-Region"}}, routed.SecureHeaders); diff != "" {
		t.Errorf("SecureHeaders (-want +got):\n%s", diff)
	}
	headers, err := ParamHeaders(routed, map[string]any{"region": "us-west1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"Mcp-Param-Region": "us-west1"}, headers); diff != "" {
		t.Errorf("ParamHeaders (-want +got):\n%s", diff)
	}

	if w := mustGet("not_overlap_case_differs").Warnings; len(w) != 1 {
		t.Errorf("case variant: want one warning, got %q", w)
	}
	for _, id := range []string{"valid_sep_example", "valid_toolbox_shape", "xmcpheader_on_secure_string"} {
		tool := mustGet(id)
		if err := Validate(tool); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if len(tool.Warnings) != 0 {
			t.Errorf("%s: unexpected warnings %q", id, tool.Warnings)
		}
	}
}
