package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(a.stdout, "agenthost", host.Version)
		},
	}
}
