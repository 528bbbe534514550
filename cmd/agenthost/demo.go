package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
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
				cfg, err := a.f.Config()
				if err != nil {
					return err
				}
				llm = cfg.LLM
			}
			err := demo.Run(cmd.Context(), demo.Options{
				Out: a.f.IO.Out, In: a.f.IO.In, Interactive: a.f.IO.StdinIsTerminal(), Live: live, LLM: llm,
			})
			if errors.Is(err, demo.ErrNoLiveModel) {
				return cmdutil.UsageErr(err)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&live, "live", false, "use the configured model endpoint instead of the script")
	return cmd
}
