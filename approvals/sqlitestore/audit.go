package sqlitestore

import (
	"context"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/internal/sqlstore"
)

// DefaultMaxBatch is how many audit records one transaction holds at most.
const DefaultMaxBatch = sqlstore.DefaultMaxBatch

// AuditOptions configure an AuditSink.
type AuditOptions struct {
	// Chain names the hash chain to append to; "" means
	// approvals.DefaultChain.
	Chain string
	// MaxBatch caps the records per transaction; 0 means DefaultMaxBatch.
	MaxBatch int
	// ChainKey keys the chain's links (approvals.ChainMAC), at least
	// approvals.MinChainKeyBytes; nil writes unkeyed links, and then a
	// chain already keyed refuses the records. Keep it outside the
	// database (docs/audit.md).
	ChainKey []byte
}

// AuditSink is an approvals.Sink (Write, Close) appending audit records to
// a SQLite file as a hash chain (see approvals.ChainHash). Write returns
// once the record's transaction committed (synchronous=FULL); concurrent
// writers share one transaction. A failed commit fails every Write of its
// batch; it is not sticky.
type AuditSink struct{ *auditCore }

type auditCore = sqlstore.AuditSink

var _ auditlog.Sink = (*AuditSink)(nil)

// OpenAuditSink opens (creating) the SQLite file at path and applies the
// migrations it lacks.
func OpenAuditSink(ctx context.Context, path string, opts AuditOptions) (*AuditSink, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.OpenAuditSink(ctx, sqlstore.SQL(db), &dialect, opts.Chain, opts.ChainKey, opts.MaxBatch, db.Close)
	if err != nil {
		return nil, err
	}
	return &AuditSink{s}, nil
}

// VerifyAudit checks every audit chain in the SQLite file at path; a
// chain with keyed links is approvals.ErrChainKeyRequired
// (VerifyAuditKeyed).
func VerifyAudit(ctx context.Context, path string) ([]auditlog.ChainReport, error) {
	return VerifyAuditKeyed(ctx, path, nil)
}

// VerifyAuditKeyed checks every audit chain in the SQLite file at path,
// keyed links with key.
func VerifyAuditKeyed(ctx context.Context, path string, key []byte) ([]auditlog.ChainReport, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return sqlstore.VerifyAudit(ctx, sqlstore.SQL(db), &dialect, key)
}
