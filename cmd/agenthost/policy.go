package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
)

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Explain approval decisions and infer a reviewable risk catalogue",
	}
	cmd.AddCommand(a.policyExplainCommand(), a.policyCatalogueCommand())
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
			cfg, err := a.loadConfigWith(server, "")
			if err != nil {
				return err
			}
			arguments := json.RawMessage("{}")
			if argsJSON != "" {
				var obj map[string]any
				if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
					return usageErr(errors.New("--args: not a JSON object"))
				}
				arguments = json.RawMessage(argsJSON)
			}
			h, err := a.newHost(cfg)
			if err != nil {
				return err
			}
			sess, err := a.newSession(h)
			if err != nil {
				return err
			}
			x, err := sess.Explain(cmd.Context(), server, tool, arguments)
			if err != nil {
				kind := host.KindOf(err)
				return &exitErr{code: exitCodeFor(kind), err: err}
			}
			if asJSON {
				if err := writeJSON(a.stdout, x); err != nil {
					return err
				}
			} else if err := x.WriteText(a.stdout); err != nil {
				return err
			}
			switch x.Decision.Action {
			case approvals.ActionAllow:
				return nil
			case approvals.ActionAsk:
				return &exitErr{code: exitWouldAsk, printed: true}
			default:
				return &exitErr{code: exitDenied, printed: true}
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
			cfg, err := a.loadConfigWith(server, "--server: ")
			if err != nil {
				return err
			}
			h, err := a.newHost(cfg)
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
					fmt.Fprintf(a.stderr, "agenthost: %s: %s %s\n", snap.Name, snap.Status, a.redact(snap.Error))
					failed++
					continue
				}
				if err := approvals.WriteCatalogueYAML(a.stdout, snap.Name, h.Catalogue(snap.Name)); err != nil {
					return err
				}
			}
			if failed > 0 {
				return &exitErr{code: exitUnavailable, printed: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}
