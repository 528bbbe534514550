// Package demo is `agenthost demo`: flags only; the run is internal/demo's.
package demo

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/demo"
)

// DemoOptions are `demo`'s.
type DemoOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	Live bool
}

// NewCmdDemo is `agenthost demo`; runF replaces demoRun (tests).
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "End-to-end demo on embedded defaults: no API key, no network, no setup",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, demoRun)
		},
	}
	cmd.Flags().BoolVar(&opts.Live, "live", false, "use the configured model endpoint instead of the script")
	return cmd
}

func demoRun(opts *DemoOptions) error {
	f := opts.Factory
	var llm config.LLM
	if opts.Live {
		cfg, err := f.Config()
		if err != nil {
			return err
		}
		llm = cfg.LLM
	}
	dopts := demo.Options{Out: f.IO.Out, Live: opts.Live, LLM: llm}
	if f.IO.StdinIsTerminal() {
		prompt := terminal.NewPrompt(f.IO.In, f.IO.Out, "you")
		defer prompt.Close()
		dopts.Approver = prompt
	}
	err := demo.Run(opts.Ctx, dopts)
	if errors.Is(err, demo.ErrNoLiveModel) {
		return cmdutil.UsageErr(err)
	}
	return err
}
