package secureparams

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func splitSeeds() []string {
	return []string{
		`{"tools":[{"name":"a"},{"name":"b"}]}`,
		` { "tools" : [ {"name":"a", "x": "]}\"["} , {"name":"b","y":[[1],{"z":null}]} ] , "nextCursor" : "c2" } `,
		`{"nextCursor":"c1","tools":[{"name":"a"}]}`,
		`{"tools":[{"name":"a"}],"tools":[{"name":"b"},{"name":"c"}]}`,
		`{"tools":[],"nextCursor":null}`, `{"tools":null}`, `{"tools":{"name":"a"}}`,
		`{"tools":[{"name":"a"}],"nextCursor":7}`, `{"tool\u0073":[{"name":"a"}]}`, `{"Tools":[{"name":"a"}]}`,
		`{"tools":[{"name":"a"}],"TOOLS":[{"name":"b"}]}`, `{"tools":[{"name":"a"}],"NextCursor":"x"}`,
		`{"nextCursor":"x"}`, `{"tools":[1,"two",null,{"name":"t"}],"_meta":{"tools":[]}}`,
		`{"tools":[{"name":"a"}]`, `[{"name":"a"}]`, `{"tools":[{"name":"a"}],"nextCursor":"\u00e9\n"}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object"},"secureInputSchema":{"type":"object","properties":{"k":{"type":"string"}}}}]}`,
		`{"tools":[{"name":"a","name":"b"}]}`, `{"tools":[{"name":7}]}`, `null`, ``,
	}
}

// FuzzSplitToolsPage: splitting never panics and reads every page exactly
// as encoding/json does (same verdict, same definitions byte for byte,
// same cursor); SplitValidToolsPage, for pages known to be valid, is the
// same function without the validation; and each listed definition parses
// as ParseTool parses its bytes.
func FuzzSplitToolsPage(f *testing.F) {
	for _, s := range splitSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, page string) {
		want, wantErr := splitToolsPageSlow(json.RawMessage(page))
		got, gotErr := SplitToolsPage(json.RawMessage(page))
		samePage(t, page, got, gotErr, want, wantErr)
		if json.Valid([]byte(page)) {
			valid, validErr := SplitValidToolsPage(json.RawMessage(page))
			samePage(t, page, valid, validErr, want, wantErr)
		}
		for i, lt := range got.Tools {
			fast, fastErr := lt.Parse(nil)
			slow, slowErr := ParseTool(want.Tools[i].Raw)
			if (fastErr == nil) != (slowErr == nil) {
				t.Fatalf("%q: tool %d: Parse %v, ParseTool %v", page, i, fastErr, slowErr)
			}
			if fastErr != nil {
				continue
			}
			if fast.Name != slow.Name || fast.DefHash() != slow.DefHash() || !cmp.Equal(fast.SecureParams, slow.SecureParams) ||
				string(fast.InputSchema) != string(slow.InputSchema) || fmt.Sprint(Validate(fast)) != fmt.Sprint(Validate(slow)) {
				t.Fatalf("%q: tool %d parses differently from its bytes", page, i)
			}
		}
	})
}

func samePage(t *testing.T, page string, got ToolsPage, gotErr error, want ToolsPage, wantErr error) {
	t.Helper()
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%q: error %v, encoding/json %v", page, gotErr, wantErr)
	}
	if len(got.Tools) != len(want.Tools) {
		t.Fatalf("%q: %d tools, encoding/json %d", page, len(got.Tools), len(want.Tools))
	}
	for i := range got.Tools {
		if string(got.Tools[i].Raw) != string(want.Tools[i].Raw) {
			t.Fatalf("%q: tool %d is %s, encoding/json %s", page, i, got.Tools[i].Raw, want.Tools[i].Raw)
		}
	}
	if (got.NextCursor == nil) != (want.NextCursor == nil) || (got.NextCursor != nil && *got.NextCursor != *want.NextCursor) {
		t.Fatalf("%q: cursor %v, encoding/json %v", page, got.NextCursor, want.NextCursor)
	}
}
