package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from and the Go version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(a.f.IO.Out, versionLine())
		},
	}
}

// versionLine is "agenthost VERSION (commit C[, modified], GOVERSION)"; the
// commit comes from the build's VCS stamp ("unknown" for builds without
// one, such as go run or test binaries).
func versionLine() string {
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
