package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/atomicfile"
)

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Explain approval decisions and infer a reviewable risk catalogue",
	}
	cmd.AddCommand(a.policyExplainCommand(), a.policyCatalogueCommand(), a.policyInitCommand())
	return cmd
}

func (a *app) policyExplainCommand() *cobra.Command {
	var (
		argsJSON string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "explain SERVER TOOL",
		Short: "Why a call would be allowed, asked or denied (exit 0, 10 or 3)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool := args[0], args[1]
			cfg, err := a.f.ConfigWith(server, "")
			if err != nil {
				return err
			}
			arguments := json.RawMessage("{}")
			if argsJSON != "" {
				var obj map[string]any
				if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
					return cmdutil.UsageErr(errors.New("--args: not a JSON object"))
				}
				arguments = json.RawMessage(argsJSON)
			}
			h, err := a.f.Host(cfg, &a.sess)
			if err != nil {
				return err
			}
			sess, err := a.f.Session(h, &a.sess)
			if err != nil {
				return err
			}
			x, err := sess.Explain(cmd.Context(), server, tool, arguments)
			if err != nil {
				kind := host.KindOf(err)
				return &cmdutil.ExitErr{Code: cmdutil.CodeFor(kind), Err: err}
			}
			if asJSON {
				if err := cmdutil.WriteJSON(a.f.IO.Out, x); err != nil {
					return err
				}
			} else if err := x.WriteText(a.f.IO.Out); err != nil {
				return err
			}
			switch x.Decision.Action {
			case approvals.ActionAllow:
				return nil
			case approvals.ActionAsk:
				return &cmdutil.ExitErr{Code: cmdutil.ExitWouldAsk, Printed: true}
			default:
				return &cmdutil.ExitErr{Code: cmdutil.ExitDenied, Printed: true}
			}
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "the call's arguments as a JSON object (they can raise risk)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	a.addSessionFlags(cmd)
	return cmd
}

func (a *app) policyCatalogueCommand() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "catalogue",
		Short: "Print a YAML catalogue of inferred risk metadata to review and paste into the config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.f.ConfigWith(server, "--server: ")
			if err != nil {
				return err
			}
			h, err := a.f.Host(cfg, &a.sess)
			if err != nil {
				return err
			}
			h.Connect(cmd.Context())
			failed := 0
			for _, snap := range h.Servers() {
				if server != "" && snap.Name != server {
					continue
				}
				if snap.Status != host.StatusConnected {
					fmt.Fprintf(a.f.IO.ErrOut, "agenthost: %s: %s %s\n", snap.Name, snap.Status, a.f.Redact(snap.Error))
					failed++
					continue
				}
				if err := approvals.WriteCatalogueYAML(a.f.IO.Out, snap.Name, h.Catalogue(snap.Name)); err != nil {
					return err
				}
			}
			if failed > 0 {
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

func (a *app) policyInitCommand() *cobra.Command {
	var (
		server  string
		entries bool
		indent  int
		write   bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Classify the configured servers' tools into one approvals block to review, print or --write into the config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if write && entries {
				return cmdutil.UsageErr(errors.New("--write and --entries do not go together"))
			}
			cfg, err := a.f.ConfigWith(server, "--server: ")
			if err != nil {
				return err
			}
			if write {
				if cfg.File == "" {
					return cmdutil.UsageErr(errors.New("--write: no configuration file (give --config or create ./agenthost.yaml)"))
				}
				if ext := strings.ToLower(filepath.Ext(cfg.File)); ext != ".yaml" && ext != ".yml" && ext != ".json" {
					return cmdutil.UsageErr(fmt.Errorf("--write edits YAML and JSON configuration files only, not %s: run without --write and merge the printed approvals block by hand", cfg.File))
				}
			}
			h, err := a.f.Host(cfg, &a.sess)
			if err != nil {
				return err
			}
			names, failed := a.f.ConnectServers(cmd.Context(), h, server, "")
			plan := h.PlanInit(names)
			switch {
			case !write && len(plan.Entries) == 0 && len(plan.Rules) == 0:
				// Nothing on stdout: what is printed there is a block to
				// merge, and an empty one reads as a broken run.
				fmt.Fprintf(a.f.IO.ErrOut, "nothing to add (%d tools already catalogued)\n", plan.Present)
			case write:
				if err := a.writeInit(cfg.File, plan); err != nil {
					return err
				}
			case entries:
				if err := approvals.WriteInitEntries(a.f.IO.Out, plan, indent); err != nil {
					return err
				}
			case isJSONConfig(cfg.File):
				// A JSON config (a copied Claude Desktop file) gets a
				// JSON block it can take as it is.
				if err := approvals.WriteInitJSON(a.f.IO.Out, plan); err != nil {
					return err
				}
			default:
				if err := approvals.WriteInitYAML(a.f.IO.Out, plan); err != nil {
					return err
				}
			}
			if failed > 0 {
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	cmd.Flags().BoolVar(&entries, "entries", false, "print only the catalogue entries, to paste under an existing catalogue:")
	cmd.Flags().IntVar(&indent, "indent", 0, "with --entries: indent every line by this many spaces")
	cmd.Flags().BoolVar(&write, "write", false, "add the entries (and default rules if the config has none) to the YAML or JSON config file")
	return cmd
}

func isJSONConfig(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

// writeInit merges plan into the YAML or JSON configuration file at path, checks
// that the result still loads, and replaces the file (same mode) only when
// something was added.
func (a *app) writeInit(path string, plan approvals.InitPlan) error {
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	info, err := os.Stat(path)
	if err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--write: %w", err)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--write: %w", err)}
	}
	merge, format := approvals.MergeInitYAML, config.FormatYAML
	if isJSONConfig(path) {
		merge, format = approvals.MergeInitJSON, config.FormatJSON
	}
	out, added, rulesAdded, changed, err := merge(data, plan)
	if err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--write %s: %w", path, err)}
	}
	if !changed {
		fmt.Fprintf(a.f.IO.Out, "%s: nothing to add (%d tools already catalogued)\n", path, plan.Present)
		return nil
	}
	if _, err := config.Parse(out, format, path); err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("--write %s: not written, the edited configuration would not load: %w", path, err)}
	}
	if err := atomicfile.Write(path, out, info.Mode().Perm()); err != nil {
		return fmt.Errorf("--write: %w", err)
	}
	rules := "no rules added (the config has rules)"
	if rulesAdded {
		rules = fmt.Sprintf("%d default rules added", len(plan.Rules))
	}
	fmt.Fprintf(a.f.IO.Out, "%s: %d catalogue entries added, %s; review them\n", path, added, rules)
	return nil
}
