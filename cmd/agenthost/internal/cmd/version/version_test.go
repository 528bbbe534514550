package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/host"
)

func TestBuildCommit(t *testing.T) {
	info := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown"},
		{"no VCS stamp", info(), true, "unknown"},
		{"a long revision is cut to 12", info("vcs.revision", "0123456789abcdef0123"), true, "0123456789ab"},
		{"a short revision stays", info("vcs.revision", "abc"), true, "abc"},
		{"modified", info("vcs.revision", "0123456789abcdef", "vcs.modified", "true"), true, "0123456789ab, modified"},
		{"not modified", info("vcs.revision", "abc", "vcs.modified", "false"), true, "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildCommit(tc.info, tc.ok); got != tc.want {
				t.Errorf("buildCommit = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVersionPrintsOneLine(t *testing.T) {
	f, out := cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdVersion(f, nil)); err != nil {
		t.Fatal(err)
	}
	got := out.Out.String()
	if !strings.HasPrefix(got, "agenthost "+host.Version+" (commit ") || !strings.HasSuffix(got, ", "+runtime.Version()+")\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("version printed %q", got)
	}
	if err := cmdtest.Parse(NewCmdVersion(f, nil), "extra"); cmdtest.Code(err) != 2 {
		t.Errorf("version with an argument: %v, want a usage error", err)
	}
}
