package pgstore

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/internal/sqlstore"
)

// DefaultMaxBatch is how many audit records one transaction holds at most.
const DefaultMaxBatch = sqlstore.DefaultMaxBatch

// AuditOptions configure an AuditSink.
type AuditOptions struct {
	// Chain names the hash chain to append to; "" means
	// approvals.DefaultChain. Every replica appends to the same chain.
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
// PostgreSQL as a hash chain (see approvals.ChainHash). Write returns once
// the record's transaction committed: concurrent writers share one
// transaction (group commit), so throughput grows with concurrency while
// every record is stored before its call goes on. A batch takes two round
// trips: BEGIN with the chain head's row lock, then the records, the new
// head and COMMIT. A failed commit fails every Write of its batch (the host
// then runs none of those calls); it is not sticky.
type AuditSink struct{ *auditCore }

type auditCore = sqlstore.AuditSink

var _ auditlog.Sink = (*AuditSink)(nil)

// OpenAuditSink connects to dsn and applies the migrations it lacks.
func OpenAuditSink(ctx context.Context, dsn string, opts AuditOptions) (*AuditSink, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.OpenAuditSink(ctx, pgDB{pool}, &dialect, opts.Chain, opts.ChainKey, opts.MaxBatch, func() error { pool.Close(); return nil })
	if err != nil {
		return nil, err
	}
	return &AuditSink{s}, nil
}

// appendAudit stores a batch of records in one statement, as arrays.
func appendAudit(chain string, links []sqlstore.Link) []sqlstore.Stmt {
	n := len(links)
	seqs, tss, sessions, prevs, hashes, records := make([]int64, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, l := range links {
		seqs[i], tss[i], sessions[i], prevs[i], hashes[i], records[i] = l.Seq, l.TS.UTC(), l.SessionID, l.PrevHash, l.Hash, string(l.Record)
	}
	return []sqlstore.Stmt{{SQL: `INSERT INTO agenthost_audit (chain, seq, ts, session_id, prev_hash, hash, record)
		SELECT $1, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[])`,
		Args: []any{chain, seqs, tss, sessions, prevs, hashes, records}}}
}

// VerifyAudit checks every audit chain in the database at dsn; a chain
// with keyed links is approvals.ErrChainKeyRequired (VerifyAuditKeyed).
func VerifyAudit(ctx context.Context, dsn string) ([]auditlog.ChainReport, error) {
	return VerifyAuditKeyed(ctx, dsn, nil)
}

// VerifyAuditKeyed checks every audit chain in the database at dsn, keyed
// links with key.
func VerifyAuditKeyed(ctx context.Context, dsn string, key []byte) ([]auditlog.ChainReport, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return sqlstore.VerifyAudit(ctx, pgDB{pool}, &dialect, key)
}
