package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
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
func VerifyAudit(ctx context.Context, cfg *config.Config, db Databases) ([]auditlog.ChainReport, error) {
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
func attachStores(cfg *config.Config, db Databases, given approvals.Store, audit auditlog.Sink, opened bool) (approvals.Store, bool, auditlog.Sink, error) {
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
	return store, owns, auditlog.MultiSink{audit, sink}, nil
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

// EnvAuditKey is the environment variable that holds the audit chain key
// (instead of audit.chainKeyFile).
const EnvAuditKey = "AGENTHOST_AUDIT_KEY"

// AuditChainKey reads the key of audit.store's chain (docs/audit.md): the
// text of AGENTHOST_AUDIT_KEY, or the content of audit.chainKeyFile (a
// final newline removed); nil when neither is set. Both set, an
// unreadable file or a key shorter than approvals.MinChainKeyBytes is a
// config error (KindConfig) that never quotes the key. getenv is
// os.Getenv when nil.
func AuditChainKey(cfg *config.Config, getenv func(string) string) ([]byte, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env, file := getenv(EnvAuditKey), cfg.Audit.ChainKeyFile
	var key []byte
	var from string
	switch {
	case env != "" && file != "":
		return nil, configErr(fmt.Errorf("both %s and audit.chainKeyFile name an audit chain key: set one", EnvAuditKey))
	case env != "":
		key, from = []byte(env), EnvAuditKey
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the path is named below
			}
			return nil, configErr(fmt.Errorf("audit.chainKeyFile %s: %w", file, err))
		}
		key, from = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), "audit.chainKeyFile "+file
	default:
		return nil, nil
	}
	if len(key) < auditlog.MinChainKeyBytes {
		return nil, configErr(fmt.Errorf("the audit chain key in %s is %d bytes, fewer than %d (openssl rand -hex 32 makes one)", from, len(key), auditlog.MinChainKeyBytes))
	}
	return key, nil
}

func configErr(err error) error {
	return &Error{Kind: KindConfig, Message: err.Error(), Err: err}
}
