package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/demo"
)

func (a *app) demoCommand() *cobra.Command {
	var live bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "End-to-end demo on embedded defaults: no API key, no network, no setup",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var llm config.LLM
			if live {
				cfg, err := a.loadConfig()
				if err != nil {
					return err
				}
				llm = cfg.LLM
			}
			opts := demo.Options{Out: a.stdout, Live: live, LLM: llm}
			if a.stdinIsTerminal() {
				prompt := terminal.NewPrompt(a.stdin, a.stdout, "you")
				defer prompt.Close()
				opts.Approver = prompt
			}
			err := demo.Run(cmd.Context(), opts)
			if errors.Is(err, demo.ErrNoLiveModel) {
				return usageErr(err)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&live, "live", false, "use the configured model endpoint instead of the script")
	return cmd
}
