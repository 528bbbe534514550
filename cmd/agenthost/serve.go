package main

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/host/serve"
)

func (a *app) serveCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR]",
		Short: "Serve the HTTP API, the approvals page and webhooks (docs/cli.md, serve/openapi.yaml)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.Serve.Listen = listen
			}
			if len(cfg.Serve.Identities) == 0 {
				fmt.Fprintln(a.stderr, "agenthost: serve.identities is empty: every /v1 request will be refused (docs/config.md, serve)")
			}
			audit := serve.NewAuditLog(0)
			a.auditAlso = audit
			h, err := a.newHost(cfg)
			if err != nil {
				return err
			}
			logger, err := a.logger()
			if err != nil {
				return err
			}
			srv, err := serve.New(serve.Options{Host: h, Config: cfg.Serve, Audit: audit, Logger: logger})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			h.Connect(ctx)
			h.WarnUnrecorded()
			err = srv.ListenAndServe(ctx, func(addr net.Addr) {
				fmt.Fprintf(a.stderr, "agenthost: serving on %s\n", addr)
			})
			if err != nil {
				return &exitErr{code: exitUsage, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on, HOST:PORT (overrides serve.listen; default 127.0.0.1:8080)")
	return cmd
}
