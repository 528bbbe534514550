package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/serve"
)

func (a *app) serveCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR]",
		Short: "Serve the HTTP API, the approvals page and webhooks (docs/cli.md, serve/openapi.yaml)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.f.Config()
			if err != nil {
				return err
			}
			if listen != "" {
				cfg.Serve.Listen = listen
			}
			if len(cfg.Serve.Identities) == 0 {
				fmt.Fprintln(a.f.IO.ErrOut, "agenthost: serve.identities is empty: every /v1 request will be refused (docs/config.md, serve)")
			}
			logger, err := a.f.Logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			shared, err := a.openSharedServe(ctx, cfg)
			if err != nil {
				return err
			}
			audit := serve.NewAuditLog(0)
			a.f.AuditAlso = audit
			h, err := a.f.Host(cfg, &a.sess)
			if err != nil {
				return err
			}
			srv, err := serve.New(serve.Options{Host: h, Config: cfg.Serve, Audit: audit, Logger: logger, Shared: shared})
			if err != nil {
				return err
			}
			if shared != nil {
				lctx, stop := context.WithCancel(ctx)
				defer stop()
				go func() {
					err := a.f.Durable.KeepLease(lctx, durable.LeaseOptions{Timeout: cfg.Serve.Replica.LeaseTimeout,
						Every: cfg.Serve.Replica.LeaseTimeout / 6,
						OnTakeOver: func(id string, n int) {
							logger.Info("serve: took over the unfinished turns of a replica whose lease expired", "replica", id, "turns", n)
						}})
					if err != nil {
						logger.Error("serve: the replica lease cannot be kept; another replica may take over this one's turns", "error", a.f.Redact(err.Error()))
					}
				}()
			}
			h.Connect(ctx)
			h.WarnUnrecorded()
			err = srv.ListenAndServe(ctx, func(addr net.Addr) {
				fmt.Fprintf(a.f.IO.ErrOut, "agenthost: serving on %s\n", addr)
			})
			if shared != nil {
				// The engine stops first: turns running here stay
				// unfinished (taken up again), rather than failing on the
				// servers the host closes.
				cmdutil.CloseWithin(a.f.IO.ErrOut, cmdutil.CloseTimeout, a.f.Durable.Close)
			}
			if err != nil {
				return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on, HOST:PORT (overrides serve.listen; default 127.0.0.1:8080)")
	return cmd
}

// openSharedServe opens the durable engine of serve's shared mode when
// approvals.store is PostgreSQL (nil otherwise): every replica then
// serves every session (docs/config.md, "serve.replica").
func (a *app) openSharedServe(ctx context.Context, cfg *config.Config) (*serve.Shared, error) {
	dsn := cfg.Approvals.Store
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return nil, nil
	}
	key, err := sessionKey(cfg.Serve.Replica.SessionKeyFile)
	if err != nil {
		return nil, cmdutil.UsageErr(err)
	}
	executor := cfg.Serve.Replica.ID
	if executor == "" {
		name, _ := os.Hostname()
		executor = "serve-" + name
	}
	e, err := durable.Open(ctx, dsn, durable.Options{ExecutorID: executor})
	if err != nil {
		return nil, &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("approvals.store: %w", err)}
	}
	a.f.Durable = e
	return &serve.Shared{Pool: e.Pool(), SealKey: key, Forget: e.DeleteSession, ForgetUnknown: durable.ErrUnknownSession}, nil
}

// sessionKey is the key sealing session values: AGENTHOST_SESSION_KEY,
// else the file serve.replica.sessionKeyFile names, else none.
func sessionKey(file string) ([]byte, error) {
	text := os.Getenv("AGENTHOST_SESSION_KEY")
	if text == "" && file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("serve.replica.sessionKeyFile: %w", err)
		}
		text = string(b)
	}
	if text == "" {
		return nil, nil
	}
	key, err := serve.ParseSealKey(text)
	if err != nil {
		return nil, fmt.Errorf("the session sealing key (AGENTHOST_SESSION_KEY or serve.replica.sessionKeyFile): %w", err)
	}
	return key, nil
}
