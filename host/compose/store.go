package compose

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/internal/closer"
)

// Databases opens the databases a DSN names (approvals.store, audit.store).
// compose links no database driver itself: approvals/stores.Databases
// opens SQLite and PostgreSQL, and a program that passes none to
// Options.Databases links neither driver (a config naming a store is then
// a configuration error).
type Databases interface {
	// Open opens the approvals store at dsn.
	Open(ctx context.Context, dsn string) (approvals.Store, error)
	// OpenAuditSink opens the audit database at dsn.
	OpenAuditSink(ctx context.Context, dsn string) (auditlog.Sink, error)
	// VerifyAudit checks every audit chain in the database at dsn.
	VerifyAudit(ctx context.Context, dsn string) ([]auditlog.ChainReport, error)
	// Describe names the kind of store at dsn for messages, without its
	// password.
	Describe(dsn string) string
}

// noDatabases is the error for a config that names a store when the
// program passed no Databases.
func noDatabases(key string) error {
	return configErr(fmt.Errorf("%s names a database, but this program opens none: pass compose.Options.Databases (approvals/stores.Databases opens SQLite and PostgreSQL; docs/config.md)", key))
}

// storeOpenTimeout bounds connecting to (and migrating) a store database
// at start.
const storeOpenTimeout = 30 * time.Second

// OpenApprovalStore opens the approvals store the config names
// (approvals.store): SQLite or PostgreSQL. It returns a config error
// (host.KindConfig) when none is configured, when the DSN is unusable, or when
// the database was migrated by a newer agenthost. The caller closes it.
func OpenApprovalStore(ctx context.Context, cfg *config.Config, db Databases) (approvals.Store, error) {
	dsn := cfg.Approvals.Store
	if dsn == "" {
		err := fmt.Errorf("approvals.store is not set: the approvals of this process live in its memory only; set approvals.store to sqlite:PATH or a postgres:// URL (docs/config.md)")
		return nil, configErr(err)
	}
	if db == nil {
		return nil, noDatabases("approvals.store")
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	s, err := db.Open(ctx, dsn)
	if err != nil {
		return nil, &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("approvals.store (%s): %v", db.Describe(dsn), err), Err: err}
	}
	return s, nil
}

// VerifyAudit checks the hash chains of the audit database the config
// names (audit.store).
func VerifyAudit(ctx context.Context, cfg *config.Config, db Databases) ([]auditlog.ChainReport, error) {
	dsn := cfg.Audit.Store
	if dsn == "" {
		err := fmt.Errorf("audit.store is not set: only database audit stores are hash-chained; set audit.store to sqlite:PATH or a postgres:// URL (docs/config.md)")
		return nil, configErr(err)
	}
	if db == nil {
		return nil, noDatabases("audit.store")
	}
	reports, err := db.VerifyAudit(ctx, dsn)
	if err != nil {
		return reports, &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("audit.store (%s): %v", db.Describe(dsn), err), Err: err}
	}
	return reports, nil
}

// openStores opens approvals.store (unless the program passed a store)
// and audit.store (unless it passed an audit sink) into opts, pushing
// each on owned.
func openStores(ctx context.Context, cfg *config.Config, db Databases, opts *host.Options, owned *closer.Stack) error {
	if opts.ApprovalStore == nil && cfg.Approvals.Store != "" {
		s, err := OpenApprovalStore(ctx, cfg, db)
		if err != nil {
			return err
		}
		owned.Push(s)
		opts.ApprovalStore = s
	}
	if opts.Audit != nil || opts.AuditDatabase != nil || cfg.Audit.Store == "" {
		return nil
	}
	if db == nil {
		return noDatabases("audit.store")
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	sink, err := db.OpenAuditSink(ctx, cfg.Audit.Store)
	if err != nil {
		return &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("audit.store (%s): %v", db.Describe(cfg.Audit.Store), err), Err: err}
	}
	owned.Push(sink)
	opts.AuditDatabase = sink
	return nil
}
