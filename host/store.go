package host

import (
	"context"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
)

// Databases opens the databases a DSN names (approvals.store, audit.store).
// The host links no database driver itself: approvals/stores.Databases
// opens SQLite and PostgreSQL, and a program that passes none to
// Options.Databases links neither driver (a config naming a store is then
// a configuration error).
type Databases interface {
	// Open opens the approvals store at dsn.
	Open(ctx context.Context, dsn string) (approvals.Store, error)
	// OpenAuditSink opens the audit database at dsn.
	OpenAuditSink(ctx context.Context, dsn string) (approvals.Sink, error)
	// VerifyAudit checks every audit chain in the database at dsn.
	VerifyAudit(ctx context.Context, dsn string) ([]approvals.ChainReport, error)
	// Describe names the kind of store at dsn for messages, without its
	// password.
	Describe(dsn string) string
}

// noDatabases is the error for a config that names a store when the
// program passed no Databases.
func noDatabases(key string) error {
	err := fmt.Errorf("%s names a database, but this program opens none: pass host.Options.Databases (approvals/stores.Databases opens SQLite and PostgreSQL; docs/config.md)", key)
	return &Error{Kind: KindConfig, Message: err.Error(), Err: err}
}

// storeOpenTimeout bounds connecting to (and migrating) a store database
// at start.
const storeOpenTimeout = 30 * time.Second

// OpenApprovalStore opens the approvals store the config names
// (approvals.store): SQLite or PostgreSQL. It returns a config error
// (KindConfig) when none is configured, when the DSN is unusable, or when
// the database was migrated by a newer agenthost. The caller closes it.
func OpenApprovalStore(ctx context.Context, cfg *config.Config, db Databases) (approvals.Store, error) {
	dsn := cfg.Approvals.Store
	if dsn == "" {
		err := fmt.Errorf("approvals.store is not set: the approvals of this process live in its memory only; set approvals.store to sqlite:PATH or a postgres:// URL (docs/config.md)")
		return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
	}
	if db == nil {
		return nil, noDatabases("approvals.store")
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	s, err := db.Open(ctx, dsn)
	if err != nil {
		return nil, &Error{Kind: KindConfig, Message: fmt.Sprintf("approvals.store (%s): %v", db.Describe(dsn), err), Err: err}
	}
	return s, nil
}

// VerifyAudit checks the hash chains of the audit database the config
// names (audit.store).
func VerifyAudit(ctx context.Context, cfg *config.Config, db Databases) ([]approvals.ChainReport, error) {
	dsn := cfg.Audit.Store
	if dsn == "" {
		err := fmt.Errorf("audit.store is not set: only database audit stores are hash-chained; set audit.store to sqlite:PATH or a postgres:// URL (docs/config.md)")
		return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
	}
	if db == nil {
		return nil, noDatabases("audit.store")
	}
	reports, err := db.VerifyAudit(ctx, dsn)
	if err != nil {
		return reports, &Error{Kind: KindConfig, Message: fmt.Sprintf("audit.store (%s): %v", db.Describe(dsn), err), Err: err}
	}
	return reports, nil
}

// attachStores opens approvals.store (unless the embedding program passed
// a store) and adds the audit.store database beside the audit sink the
// host opened. audit is the sink so far; opened reports that the host
// opened it from the config (a sink passed in Options is used alone).
func attachStores(cfg *config.Config, db Databases, given approvals.Store, audit approvals.Sink, opened bool) (approvals.Store, bool, approvals.Sink, error) {
	store, owns := given, false
	if store == nil && cfg.Approvals.Store != "" {
		s, err := OpenApprovalStore(context.Background(), cfg, db)
		if err != nil {
			return nil, false, audit, err
		}
		store, owns = s, true
	}
	if !opened || cfg.Audit.Store == "" {
		return store, owns, audit, nil
	}
	if db == nil {
		if owns {
			_ = store.Close()
		}
		return nil, false, audit, noDatabases("audit.store")
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	sink, err := db.OpenAuditSink(ctx, cfg.Audit.Store)
	if err != nil {
		if owns {
			_ = store.Close()
		}
		return nil, false, audit, &Error{Kind: KindConfig, Message: fmt.Sprintf("audit.store (%s): %v", db.Describe(cfg.Audit.Store), err), Err: err}
	}
	if u, ok := audit.(*unrecordedSink); ok && cfg.Audit.Path == "" {
		_ = u.Close()
		return store, owns, sink, nil // the database is the record; nothing to warn about
	}
	return store, owns, approvals.MultiSink{audit, sink}, nil
}

// ApprovalStore is the store approval requests and session grants are kept
// in (approvals.store, or Options.ApprovalStore); nil when neither is set
// and every session keeps its own grants.
func (h *Host) ApprovalStore() approvals.Store { return h.store }

// grantStore is where sessions keep their grants: the shared store when
// one is configured, else nil (each session's Gate keeps its own).
func (h *Host) grantStore() approvals.GrantStore {
	if h.store == nil {
		return nil
	}
	return h.store
}
