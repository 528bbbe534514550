package answermode

import (
	"encoding/json"
	"testing"
)

func TestParseAnswerMode(t *testing.T) {
	for _, tc := range []struct {
		in                string
		want              Mode
		err               string
		terminal, offTerm Mode
		questions         bool
	}{
		{"", Default, "", Prompt, Deny, false},
		{"prompt", Prompt, "", Prompt, Prompt, false},
		{"deny", Deny, "", Deny, Deny, false},
		{"auto", Auto, "", Auto, Auto, true},
		{"wait", Wait, "", Wait, Wait, false},
		{"yes", "", `"yes" is not one of prompt, deny, auto, wait`, "", "", false},
		{"Auto", "", `"Auto" is not one of prompt, deny, auto, wait`, "", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := Parse(tc.in)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Parse(%q) = %q, %v; want %q", tc.in, m, err, tc.err)
				}
				return
			}
			if err != nil || m != tc.want {
				t.Fatalf("Parse(%q) = %q, %v", tc.in, m, err)
			}
			if got := m.Resolve(true); got != tc.terminal {
				t.Errorf("on a terminal: %q, want %q", got, tc.terminal)
			}
			if got := m.Resolve(false); got != tc.offTerm {
				t.Errorf("off a terminal: %q, want %q", got, tc.offTerm)
			}
			if m.AcceptsQuestions() != tc.questions {
				t.Errorf("AcceptsQuestions = %t", !tc.questions)
			}
		})
	}
}

func TestPermissionModeAnswer(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want Mode
		err  string
	}{
		{"default", Default, ""},
		{"acceptEdits", Default, ""},
		{"plan", Deny, ""},
		{"dontAsk", Deny, ""},
		{"bypassPermissions", Auto, ""},
		{"yolo", "", `"yolo" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions`},
		{"", "", `"" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			got, err := FromPermissionMode(tc.mode)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("%q, %v; want %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
			// Every mode it stands for is one --approve takes.
			if _, err := Parse(string(got)); err != nil {
				t.Error(err)
			}
		})
	}
}

// Auto answers with the defaults of the requested schema
// (SEP-1034), of every type, and nothing for a property without one.
func TestElicitationDefaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema any
		want   string
	}{
		{"every type", json.RawMessage(`{"type":"object","properties":{
			"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},
			"score":{"type":"number","default":95.5},"status":{"type":"string","enum":["active","inactive"],"default":"active"},
			"verified":{"type":"boolean","default":true},"note":{"type":"string"}}}`),
			`{"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`},
		{"a map schema", map[string]any{"properties": map[string]any{"n": map[string]any{"default": 1}}}, `{"n":1}`},
		{"no properties", json.RawMessage(`{"type":"object"}`), `{}`},
		{"a null default is none", json.RawMessage(`{"properties":{"x":{"default":null}}}`), `{}`},
		{"not a schema", json.RawMessage(`[1,2]`), `{}`},
		{"nil", nil, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(ElicitationDefaults(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("ElicitationDefaults = %s, want %s", got, tc.want)
			}
		})
	}
}

func FuzzElicitationDefaults(f *testing.F) {
	for _, seed := range []string{`{"properties":{"a":{"default":1}}}`, `{"properties":[]}`, `null`, `{"properties":{"a":{"default":{"b":[1]}}}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		// Whatever the server sends, the answer is a JSON object.
		if _, err := json.Marshal(ElicitationDefaults(json.RawMessage(raw))); err != nil {
			t.Fatalf("the answer does not encode: %v", err)
		}
	})
}
