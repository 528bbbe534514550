package demo

import (
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		live bool
		code int
	}{
		{nil, false, 0},
		{[]string{"--live"}, true, 0},
		{[]string{"extra"}, false, 2},
	} {
		f, _ := cmdtest.Factory(t, "", "")
		var got *DemoOptions
		err := cmdtest.Parse(NewCmdDemo(f, func(o *DemoOptions) error { got = o; return nil }), tc.args...)
		if cmdtest.Code(err) != tc.code {
			t.Errorf("%v: %v, want exit %d", tc.args, err, tc.code)
			continue
		}
		if tc.code == 0 && (got == nil || got.Live != tc.live || got.Ctx == nil) {
			t.Errorf("%v: options %+v, want live %t with a context", tc.args, got, tc.live)
		}
	}
}

// --live without a configured model is a usage error (exit 2) naming what
// is missing, before any request is made.
func TestDemoLiveWithoutAModel(t *testing.T) {
	t.Setenv("AGENTHOST_LLM_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	f, s := cmdtest.Factory(t, "", "")
	err := cmdtest.Parse(NewCmdDemo(f, nil), "--live")
	if cmdtest.Code(err) != 2 {
		t.Fatalf("demo --live with no model: %v (exit %d), want exit 2\nstdout: %s", err, cmdtest.Code(err), s.Out.String())
	}
}
