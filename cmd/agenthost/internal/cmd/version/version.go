// Package version is `agenthost version` and the line --version prints.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// VersionOptions are `version`'s.
type VersionOptions struct {
	IO *cmdutil.IOStreams
}

// NewCmdVersion is `agenthost version`; runF replaces versionRun (tests).
func NewCmdVersion(f *cmdutil.Factory, runF func(*VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: f.IO}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cmdutil.Run(opts, runF, versionRun)
		},
	}
}

func versionRun(opts *VersionOptions) error {
	_, err := fmt.Fprintln(opts.IO.Out, Line())
	return err
}

// Line is "agenthost VERSION (commit C[, modified], GOVERSION)"; the
// commit comes from the build's VCS stamp ("unknown" for builds without
// one, such as go run or test binaries).
func Line() string {
	return fmt.Sprintf("agenthost %s (commit %s, %s)", host.Version, buildCommit(debug.ReadBuildInfo()), runtime.Version())
}

func buildCommit(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown"
	}
	var rev string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified {
		rev += ", modified"
	}
	return rev
}
