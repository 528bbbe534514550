package sessions

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func TestSessionsOnAnEmptyStore(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		msg    string
	}{
		{[]string{"list"}, 0, "", ""},
		{[]string{"list", "--json", "--here"}, 0, "[]\n", ""},
		{[]string{"show", "nope"}, 2, "", "nope"},
		{[]string{"delete", "nope"}, 2, "", "nope"},
		{[]string{"show"}, 2, "", "accepts 1 arg(s)"},
		{[]string{"list", "x"}, 2, "", "unknown command"},
	} {
		f, s := cmdtest.Factory(t, "", "")
		err := cmdtest.Parse(NewCmdSessions(f), tc.args...)
		if cmdtest.Code(err) != tc.code || s.Out.String() != tc.stdout || (tc.msg != "" && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("sessions %v: %v (exit %d), stdout %q; want exit %d, stdout %q, %q", tc.args, err, cmdtest.Code(err), s.Out.String(), tc.code, tc.stdout, tc.msg)
		}
	}
}
