// Package serve is `agenthost serve`: the flags and the wiring of
// host/serve (the HTTP API, the approvals page, webhooks) to the host.
package serve

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

// ServeOptions are `serve`'s.
type ServeOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx    context.Context
	Listen string
}

// NewCmdServe is `agenthost serve`; runF replaces serveRun (tests).
func NewCmdServe(f *cmdutil.Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   cmdutil.ServeUse,
		Short: cmdutil.ServeShort,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, serveRun)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "", "address to listen on, HOST:PORT (overrides serve.listen; default 127.0.0.1:8080)")
	return cmd
}

func serveRun(opts *ServeOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if opts.Listen != "" {
		cfg.Serve.Listen = opts.Listen
	}
	if len(cfg.Serve.Identities) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "agenthost: serve.identities is empty: every /v1 request will be refused (docs/config.md, serve)")
	}
	logger, err := f.Logger()
	if err != nil {
		return err
	}
	ctx := opts.Ctx
	shared, engine, err := openSharedServe(ctx, f, cfg)
	if err != nil {
		return err
	}
	audit := serve.NewAuditLog(0)
	f.AuditAlso = audit
	h, err := f.Host(cfg, nil)
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
			err := engine.KeepLease(lctx, durable.LeaseOptions{Timeout: cfg.Serve.Replica.LeaseTimeout,
				Every: cfg.Serve.Replica.LeaseTimeout / 6,
				OnTakeOver: func(id string, n int) {
					logger.Info("serve: took over the unfinished turns of a replica whose lease expired", "replica", id, "turns", n)
				}})
			if err != nil {
				logger.Error("serve: the replica lease cannot be kept; another replica may take over this one's turns", "error", f.Redact(err.Error()))
			}
		}()
	}
	h.Connect(ctx)
	h.WarnUnrecorded()
	err = srv.ListenAndServe(ctx, func(addr net.Addr) {
		fmt.Fprintf(f.IO.ErrOut, "agenthost: serving on %s\n", addr)
	})
	if shared != nil {
		// The engine stops first: turns running here stay
		// unfinished (taken up again), rather than failing on the
		// servers the host closes.
		cmdutil.CloseWithin(f.IO.ErrOut, cmdutil.CloseTimeout, f.Durable.Close)
	}
	if err != nil {
		return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
	}
	return nil
}

// openSharedServe opens the durable engine of serve's shared mode when
// approvals.store is PostgreSQL (nil otherwise): every replica then
// serves every session (docs/config.md, "serve.replica").
func openSharedServe(ctx context.Context, f *cmdutil.Factory, cfg *config.Config) (*serve.Shared, *durable.Engine, error) {
	dsn := cfg.Approvals.Store
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return nil, nil, nil
	}
	key, err := sessionKey(cfg.Serve.Replica.SessionKeyFile)
	if err != nil {
		return nil, nil, cmdutil.UsageErr(err)
	}
	executor := cfg.Serve.Replica.ID
	if executor == "" {
		name, _ := os.Hostname()
		executor = "serve-" + name
	}
	e, err := durable.Open(ctx, dsn, durable.Options{ExecutorID: executor})
	if err != nil {
		return nil, nil, &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: fmt.Errorf("approvals.store: %w", err)}
	}
	f.Durable = e
	return &serve.Shared{Pool: e.Pool(), SealKey: key, Forget: e.DeleteSession, ForgetUnknown: durable.ErrUnknownSession}, e, nil
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
