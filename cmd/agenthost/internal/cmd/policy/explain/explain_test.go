package explain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestExplainFlags(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	var got *ExplainOptions
	if err := cmdtest.Parse(NewCmdExplain(f, func(o *ExplainOptions) error { got = o; return nil }), "shop", "echo", "--args", `{"a":1}`, "--json", "--trust", "2"); err != nil {
		t.Fatal(err)
	}
	if got.Server != "shop" || got.Tool != "echo" || got.Args != `{"a":1}` || !got.JSON || got.Session.Trust != 2 || got.Ctx == nil {
		t.Errorf("options %+v", got)
	}
	for _, args := range [][]string{{"shop"}, {"a", "b", "c"}} {
		if err := cmdtest.Parse(NewCmdExplain(f, func(*ExplainOptions) error { return nil }), args...); cmdtest.Code(err) != 2 {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestExplainRun(t *testing.T) {
	url := cmdtest.StartServer(t)
	cfg := "mcpServers:\n  shop:\n    url: " + url + "\n"
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		// Nobody classified echo: a call would ask (exit 10).
		{"unclassified asks", []string{"shop", "echo"}, 10, "ask"},
		{"unknown server", []string{"nope", "echo"}, 2, ""},
		{"bad args", []string{"shop", "echo", "--args", "1"}, 2, ""},
		{"unknown tool", []string{"shop", "nope"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, s := cmdtest.Factory(t, cfg, "")
			err := cmdtest.Parse(NewCmdExplain(f, nil), tc.args...)
			if tc.name == "unknown tool" {
				if err == nil || cmdtest.Code(err) == 0 || cmdtest.Code(err) == 10 {
					t.Errorf("unknown tool: %v (exit %d), want a failure", err, cmdtest.Code(err))
				}
				return
			}
			if cmdtest.Code(err) != tc.code {
				t.Fatalf("exit %d (%v), want %d\nstdout: %s", cmdtest.Code(err), err, tc.code, s.Out.String())
			}
			if !strings.Contains(s.Out.String(), tc.out) {
				t.Errorf("stdout %q lacks %q", s.Out.String(), tc.out)
			}
		})
	}
	f, s := cmdtest.Factory(t, cfg, "")
	err := cmdtest.Parse(NewCmdExplain(f, nil), "shop", "echo", "--json")
	if cmdtest.Code(err) != 10 {
		t.Fatalf("exit %d (%v), want 10", cmdtest.Code(err), err)
	}
	var doc struct {
		Decision struct {
			Decision string `json:"decision"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(s.Out.Bytes(), &doc); err != nil || doc.Decision.Decision != "ask" {
		t.Errorf("--json: %v, %+v\n%s", err, doc, s.Out.String())
	}
	if !strings.HasPrefix(s.Out.String(), "{\n  \"") {
		t.Errorf("--json is not indented:\n%s", s.Out.String())
	}
}
