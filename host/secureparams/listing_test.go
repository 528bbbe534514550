package secureparams

import (
	"encoding/json"
	"testing"
)

// The fast split must read every page exactly as encoding/json does.
func TestSplitToolsPageAgreesWithEncodingJSON(t *testing.T) {
	pages := []string{
		`{"tools":[{"name":"a"},{"name":"b"}]}`,
		` { "tools" : [ {"name":"a", "x": "]}\"["} , {"name":"b","y":[[1],{"z":null}]} ] , "nextCursor" : "c2" } `,
		`{"nextCursor":"c1","tools":[{"name":"a"}]}`,
		`{"tools":[{"name":"a"}],"tools":[{"name":"b"},{"name":"c"}]}`,
		`{"tools":[],"nextCursor":null}`,
		`{"tools":null}`,
		`{"tools":{"name":"a"}}`,
		`{"tools":[{"name":"a"}],"nextCursor":7}`,
		`{"tool\u0073":[{"name":"a"}]}`,
		`{"Tools":[{"name":"a"}]}`,
		`{"tools":[{"name":"a"}],"TOOLS":[{"name":"b"}]}`,
		`{"tools":[{"name":"a"}],"NextCursor":"x"}`,
		`{"nextCursor":"x"}`,
		`{"tools":[1,"two",null,{"name":"t"}],"_meta":{"tools":[]}}`,
		`{"tools":[{"name":"a"}]`,
		`[{"name":"a"}]`,
		`{"tools":[{"name":"a"}],"nextCursor":"\u00e9\n"}`,
	}
	for _, page := range pages {
		want, wantErr := splitToolsPageSlow(json.RawMessage(page))
		got, gotErr := SplitToolsPage(json.RawMessage(page))
		if (wantErr != nil) != (gotErr != nil) {
			t.Errorf("%s: error %v, encoding/json %v", page, gotErr, wantErr)
			continue
		}
		if len(got.Tools) != len(want.Tools) {
			t.Errorf("%s: %d tools, encoding/json %d", page, len(got.Tools), len(want.Tools))
			continue
		}
		for i := range got.Tools {
			if string(got.Tools[i].Raw) != string(want.Tools[i].Raw) {
				t.Errorf("%s: tool %d is %s, encoding/json %s", page, i, got.Tools[i].Raw, want.Tools[i].Raw)
			}
		}
		if (got.NextCursor == nil) != (want.NextCursor == nil) || (got.NextCursor != nil && *got.NextCursor != *want.NextCursor) {
			t.Errorf("%s: cursor %v, encoding/json %v", page, got.NextCursor, want.NextCursor)
		}
	}
}
