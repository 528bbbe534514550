// Package initcmd is `agenthost policy init`: the configured servers'
// tools classified (host.PlanInit) into one approvals block, printed or
// merged into the config file.
package initcmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
)

// InitOptions are `policy init`'s.
type InitOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx     context.Context
	Server  string
	Entries bool
	Indent  int
	Write   bool
}

// NewCmdInit is `agenthost policy init`; runF replaces initRun (tests).
func NewCmdInit(f *cmdutil.Factory, runF func(*InitOptions) error) *cobra.Command {
	opts := &InitOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Classify the configured servers' tools into one approvals block to review, print or --write into the config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			if opts.Write && opts.Entries {
				return cmdutil.UsageErr(errors.New("--write and --entries do not go together"))
			}
			return cmdutil.Run(opts, runF, initRun)
		},
	}
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server")
	cmd.Flags().BoolVar(&opts.Entries, "entries", false, "print only the catalogue entries, to paste under an existing catalogue:")
	cmd.Flags().IntVar(&opts.Indent, "indent", 0, "with --entries: indent every line by this many spaces")
	cmd.Flags().BoolVar(&opts.Write, "write", false, "add the entries (and default rules if the config has none) to the YAML or JSON config file")
	return cmd
}

func initRun(opts *InitOptions) error {
	f := opts.Factory
	cfg, err := f.ConfigWith(opts.Server, "--server: ")
	if err != nil {
		return err
	}
	if opts.Write {
		if err := writable(cfg.File); err != nil {
			return err
		}
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		return err
	}
	names, failed := f.ConnectServers(opts.Ctx, h, opts.Server, "")
	plan := h.PlanInit(names)
	switch {
	case !opts.Write && len(plan.Entries) == 0 && len(plan.Rules) == 0:
		// Nothing on stdout: what is printed there is a block to merge,
		// and an empty one reads as a broken run.
		fmt.Fprintf(f.IO.ErrOut, "nothing to add (%d tools already catalogued)\n", plan.Present)
	case opts.Write:
		err = writeInit(f.IO, cfg.File, plan)
	case opts.Entries:
		err = policyinit.WriteInitEntries(f.IO.Out, plan, opts.Indent)
	case policyinit.IsJSONFile(cfg.File):
		// A JSON config (a copied Claude Desktop file) gets a JSON block
		// it can take as it is.
		err = policyinit.WriteInitJSON(f.IO.Out, plan)
	default:
		err = policyinit.WriteInitYAML(f.IO.Out, plan)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return cmdutil.Exit(cmdutil.ExitUnavailable)
	}
	return nil
}

// writable checks that --write has a YAML or JSON file to edit.
func writable(file string) error {
	if file == "" {
		return cmdutil.UsageErr(errors.New("--write: no configuration file (give --config or create ./agenthost.yaml)"))
	}
	if _, err := policyinit.EditFormat(file); err != nil {
		return cmdutil.UsageErr(fmt.Errorf("--write edits YAML and JSON configuration files only, not %s: run without --write and merge the printed approvals block by hand", file))
	}
	return nil
}

// writeInit merges plan into the configuration file at path
// (policyinit.WriteInitFile, which checks with the config's loader that
// the result still loads) and says what it added.
func writeInit(io *cmdutil.IOStreams, path string, plan policyinit.InitPlan) error {
	res, err := policyinit.WriteInitFile(path, plan, func(data []byte, format, path string) error {
		_, err := config.Parse(data, format, path)
		return err
	})
	var we *policyinit.WriteError
	if errors.As(err, &we) {
		switch we.Stage {
		case policyinit.StageRead:
			return cmdutil.UsageErr(fmt.Errorf("--write: %w", we.Err))
		case policyinit.StageMerge:
			return cmdutil.UsageErr(fmt.Errorf("--write %s: %w", we.Path, we.Err))
		case policyinit.StageCheck:
			return cmdutil.UsageErr(fmt.Errorf("--write %s: not written, the edited configuration would not load: %w", we.Path, we.Err))
		}
		return fmt.Errorf("--write: %w", we.Err)
	}
	if err != nil {
		return err
	}
	if !res.Changed {
		fmt.Fprintf(io.Out, "%s: nothing to add (%d tools already catalogued)\n", res.Path, plan.Present)
		return nil
	}
	rules := "no rules added (the config has rules)"
	if res.RulesAdded {
		rules = fmt.Sprintf("%d default rules added", len(plan.Rules))
	}
	fmt.Fprintf(io.Out, "%s: %d catalogue entries added, %s; review them\n", res.Path, res.Added, rules)
	return nil
}
