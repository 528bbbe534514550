package toolset

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseTools(t *testing.T) {
	cases := []struct {
		name      string
		json      string
		wantNames []string // names of served entries ("" for a nameless or non-object entry)
		wantErr   string
	}{
		{"array", `[{"name":"a"},{"name":"b"}]`, []string{"a", "b"}, ""},
		{"object", `{"tools":[{"name":"a"}]}`, []string{"a"}, ""},
		{"fixture entries", `{"_about":"x","tools":[{"id":"i","expect":"reject","tool":{"name":"f"}},{"name":"plain"}]}`, []string{"f", "plain"}, ""},
		{"duplicates and junk are served verbatim", `[{"name":"a"},{"name":"a"},42,{"description":"nameless"}]`, []string{"a", "a", "", ""}, ""},
		{"empty", ``, nil, ""},
		{"not tools", `{"nope":1}`, nil, "want a JSON array"},
		{"unknown x-test field", `[{"name":"a","x-test":{"sleeep":"1s"}}]`, nil, `unknown field "sleeep"`},
		{"bad sleep", `[{"name":"a","x-test":{"sleep":"soon"}}]`, nil, "not a non-negative duration"},
		{"content not an array", `[{"name":"a","x-test":{"content":{"type":"text"}}}]`, nil, "content must be an array"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := Parse([]byte(tc.json), "")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range ts.Visible(true, false) {
				var entry struct {
					Name   string          `json:"name"`
					XTest  json.RawMessage `json:"x-test"`
					Expect json.RawMessage `json:"expect"`
				}
				_ = json.Unmarshal(tool, &entry)
				if entry.XTest != nil || entry.Expect != nil {
					t.Errorf("served %s", tool)
				}
				names = append(names, entry.Name)
			}
			if !slices.Equal(names, tc.wantNames) {
				t.Errorf("names %q, want %q", names, tc.wantNames)
			}
		})
	}
}

// TestFallbackView pins which tools an un-negotiated client sees.
func TestFallbackView(t *testing.T) {
	ts, err := Parse([]byte(`[
		{"name":"required","secureInputSchema":{"type":"object","properties":{"a":{}},"required":["a"]}},
		{"name":"optional","secureInputSchema":{"type":"object","properties":{"a":{}}}},
		{"name":"unreadable","secureInputSchema":"object"},
		{"name":"null","secureInputSchema":null},
		{"name":"plain"}]`), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, raw := range ts.Visible(false, false) {
		got = append(got, string(raw))
	}
	want := []string{`{"name":"optional"}`, `{"name":"null","secureInputSchema":null}`, `{"name":"plain"}`}
	if !slices.Equal(got, want) {
		t.Errorf("fallback view %q, want %q", got, want)
	}
}
