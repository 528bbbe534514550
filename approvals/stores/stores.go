// Package stores opens the approvals store and the audit database named by
// a DSN from the configuration (approvals.store, audit.store): sqlite:PATH
// for one node (sqlitestore) or postgres://... for many replicas
// (pgstore). It is the one place that links both drivers; library users
// who want neither open a MemStore directly.
package stores

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/pgstore"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
)

// ErrUnknownDSN: the DSN is neither sqlite:PATH nor a postgres:// URL.
var ErrUnknownDSN = errors.New("not a store DSN: want sqlite:PATH or postgres://user:password@host:port/database")

// ErrSchemaTooNew: the database was migrated by a newer agenthost.
var ErrSchemaTooNew = pgstore.ErrSchemaTooNew

// Open opens the approvals store at dsn; "" is a fresh MemStore (this
// process only).
func Open(ctx context.Context, dsn string) (approvals.Store, error) {
	switch {
	case dsn == "":
		return approvals.NewMemStore(approvals.MemStoreOptions{}), nil
	case sqlitestore.IsDSN(dsn):
		return sqlitestore.Open(ctx, strings.TrimPrefix(dsn, sqlitestore.Prefix), sqlitestore.Options{})
	case pgstore.IsDSN(dsn):
		return pgstore.Open(ctx, dsn, pgstore.Options{})
	}
	return nil, ErrUnknownDSN
}

// OpenAuditSink opens the audit database at dsn, with unkeyed links.
func OpenAuditSink(ctx context.Context, dsn string) (auditlog.Sink, error) {
	return openAuditSink(ctx, dsn, nil)
}

func openAuditSink(ctx context.Context, dsn string, key []byte) (auditlog.Sink, error) {
	switch {
	case sqlitestore.IsDSN(dsn):
		return sqlitestore.OpenAuditSink(ctx, strings.TrimPrefix(dsn, sqlitestore.Prefix), sqlitestore.AuditOptions{ChainKey: key})
	case pgstore.IsDSN(dsn):
		return pgstore.OpenAuditSink(ctx, dsn, pgstore.AuditOptions{ChainKey: key})
	}
	return nil, ErrUnknownDSN
}

// VerifyAudit checks every audit chain in the database at dsn, without a
// key (a keyed chain is approvals.ErrChainKeyRequired).
func VerifyAudit(ctx context.Context, dsn string) ([]auditlog.ChainReport, error) {
	return verifyAudit(ctx, dsn, nil)
}

func verifyAudit(ctx context.Context, dsn string, key []byte) ([]auditlog.ChainReport, error) {
	switch {
	case sqlitestore.IsDSN(dsn):
		return sqlitestore.VerifyAuditKeyed(ctx, strings.TrimPrefix(dsn, sqlitestore.Prefix), key)
	case pgstore.IsDSN(dsn):
		return pgstore.VerifyAuditKeyed(ctx, dsn, key)
	}
	return nil, ErrUnknownDSN
}

// Redact returns dsn fit for a message: a postgres:// URL's password is
// replaced by "xxxxx".
func Redact(dsn string) string {
	if !pgstore.IsDSN(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}

// Describe names the kind of store at dsn, for messages.
func Describe(dsn string) string {
	switch {
	case dsn == "":
		return "memory"
	case sqlitestore.IsDSN(dsn):
		return "SQLite " + strings.TrimPrefix(dsn, sqlitestore.Prefix)
	}
	return fmt.Sprintf("PostgreSQL %s", Redact(dsn))
}

// Databases opens SQLite and PostgreSQL stores by DSN for a host
// (compose.Options.Databases); its methods are this package's functions,
// with ChainKey keying the audit chain.
type Databases struct {
	// ChainKey keys the audit chain's links (approvals.ChainMAC) that
	// OpenAuditSink writes and VerifyAudit checks; nil: unkeyed. It is
	// read from outside the config text and the database
	// (host.AuditChainKey).
	ChainKey []byte
}

// Open opens the approvals store at dsn (see Open).
func (Databases) Open(ctx context.Context, dsn string) (approvals.Store, error) {
	return Open(ctx, dsn)
}

// OpenAuditSink opens the audit database at dsn, keyed with d.ChainKey.
func (d Databases) OpenAuditSink(ctx context.Context, dsn string) (auditlog.Sink, error) {
	return openAuditSink(ctx, dsn, d.ChainKey)
}

// VerifyAudit checks every audit chain at dsn, keyed links with
// d.ChainKey.
func (d Databases) VerifyAudit(ctx context.Context, dsn string) ([]auditlog.ChainReport, error) {
	return verifyAudit(ctx, dsn, d.ChainKey)
}

// Describe names the kind of store at dsn (see Describe).
func (Databases) Describe(dsn string) string { return Describe(dsn) }
