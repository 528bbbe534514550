package approvals

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/vote"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

func storeConfig(t *testing.T) string {
	return "approvals:\n  store: sqlite:" + filepath.Join(t.TempDir(), "approvals.db") + "\n"
}

func TestApprovalsOnAnEmptyStore(t *testing.T) {
	cfg := storeConfig(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		msg    string
	}{
		{[]string{"list"}, 0, "no approval requests\n", ""},
		{[]string{"list", "--all", "--json"}, 0, "[]\n", ""},
		{[]string{"show", "apr_nope"}, 11, "", "apr_nope"},
		{[]string{"approve", "apr_nope", "--as", "ann"}, 11, "", ""},
		{[]string{"reject", "apr_nope", "--as", "ann", "--reason", "no"}, 11, "", ""},
		{[]string{"approve", "apr_nope"}, 2, "", "--as NAME is required"},
		{[]string{"reject", "apr_nope", "--as", "  "}, 2, "", "--as NAME is required"},
		{[]string{"reject", "apr_nope", "--as", "ann", "--for-session"}, 2, "", "unknown flag: --for-session"},
		{[]string{"show"}, 2, "", "accepts 1 arg(s)"},
	} {
		f, s := cmdtest.Factory(t, cfg, "")
		err := cmdtest.Parse(NewCmdApprovals(f), tc.args...)
		if cmdtest.Code(err) != tc.code || s.Out.String() != tc.stdout || (tc.msg != "" && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("approvals %v: %v (exit %d), stdout %q; want exit %d, stdout %q, %q", tc.args, err, cmdtest.Code(err), s.Out.String(), tc.code, tc.stdout, tc.msg)
		}
	}
}

// Without approvals.store the commands have nothing to open: a
// configuration error (exit 2).
func TestApprovalsWithoutAStore(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdApprovals(f), "list"); cmdtest.Code(err) != 2 {
		t.Errorf("list with no store: %v (exit %d), want 2", err, cmdtest.Code(err))
	}
}

func TestVoteFlags(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	var got *vote.VoteOptions
	capture := func(o *vote.VoteOptions) error { got = o; return nil }
	if err := cmdtest.Parse(vote.NewCmdVote(f, true, capture), "apr_1", "--as", "ann", "--reason", "ok", "--for-session", "--json"); err != nil {
		t.Fatal(err)
	}
	if got.ID != "apr_1" || !got.Allow || got.As != "ann" || got.Reason != "ok" || !got.ForSession || !got.JSON {
		t.Errorf("approve options %+v", got)
	}
	if err := cmdtest.Parse(vote.NewCmdVote(f, false, capture), "apr_2", "--as", "bob"); err != nil {
		t.Fatal(err)
	}
	if got.ID != "apr_2" || got.Allow || got.ForSession {
		t.Errorf("reject options %+v", got)
	}
}
