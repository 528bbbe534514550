package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/internal/groupcommit"
)

// DefaultMaxBatch is how many audit records one transaction holds at most.
const DefaultMaxBatch = 512

// AuditOptions configure an AuditSink.
type AuditOptions struct {
	// Chain names the hash chain to append to; "" means
	// approvals.DefaultChain.
	Chain string
	// MaxBatch caps the records per transaction; 0 means DefaultMaxBatch.
	MaxBatch int
}

// AuditSink appends audit records to a SQLite file as a hash chain (see
// approvals.ChainHash). Write returns once the record's transaction
// committed (synchronous=FULL); concurrent writers share one transaction.
// A failed commit fails every Write of its batch; it is not sticky.
type AuditSink struct {
	db    *sql.DB
	chain string
	gc    *groupcommit.Committer[auditItem]
}

type auditItem struct {
	ts      time.Time
	session string
	line    []byte
}

var _ approvals.Sink = (*AuditSink)(nil)

// OpenAuditSink opens (creating) the SQLite file at path and applies the
// migrations it lacks.
func OpenAuditSink(ctx context.Context, path string, opts AuditOptions) (*AuditSink, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	if opts.Chain == "" {
		opts.Chain = approvals.DefaultChain
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	s := &AuditSink{db: db, chain: opts.Chain}
	s.gc = groupcommit.New(s.commit, opts.MaxBatch)
	return s, nil
}

// Write stores one record; it returns after the commit.
func (s *AuditSink) Write(ctx context.Context, r *approvals.Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	err = s.gc.Write(context.WithoutCancel(ctx), auditItem{ts: r.TS, session: r.SessionID, line: line})
	if errors.Is(err, groupcommit.ErrClosed) {
		return approvals.ErrSinkClosed
	}
	return err
}

func (s *AuditSink) commit(ctx context.Context, batch []auditItem) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE
	if err != nil {
		return fmt.Errorf("write audit records to SQLite: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var seq int64
	var hash string
	switch err := tx.QueryRowContext(ctx, "SELECT seq, hash FROM agenthost_audit_heads WHERE chain = ?", s.chain).Scan(&seq, &hash); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read the audit chain head: %w", err)
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO agenthost_audit (chain, seq, ts, session_id, prev_hash, hash, record) VALUES (?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return fmt.Errorf("write audit records to SQLite: %w", err)
	}
	defer stmt.Close()
	for _, it := range batch {
		prev := hash
		hash = approvals.ChainHash(prev, it.line)
		seq++
		if _, err := stmt.ExecContext(ctx, s.chain, seq, it.ts.UnixNano(), it.session, prev, hash, string(it.line)); err != nil {
			return fmt.Errorf("write audit records to SQLite: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO agenthost_audit_heads (chain, seq, hash) VALUES (?, ?, ?)
		ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`, s.chain, seq, hash); err != nil {
		return fmt.Errorf("write audit records to SQLite: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit audit records to SQLite: %w", err)
	}
	return nil
}

// Close writes what is queued and closes the file.
func (s *AuditSink) Close() error {
	if err := s.gc.Close(); err != nil {
		return approvals.ErrSinkClosed
	}
	return s.db.Close()
}

// VerifyAudit checks every audit chain in the SQLite file at path.
func VerifyAudit(ctx context.Context, path string) ([]approvals.ChainReport, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return approvals.VerifyChains(ctx, chainSource{db})
}

type chainSource struct{ db *sql.DB }

func (c chainSource) Chains(ctx context.Context) ([]string, error) {
	rows, err := c.db.QueryContext(ctx, "SELECT chain FROM agenthost_audit_heads UNION SELECT DISTINCT chain FROM agenthost_audit ORDER BY 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func (c chainSource) Head(ctx context.Context, chain string) (int64, string, error) {
	var seq int64
	var hash string
	err := c.db.QueryRowContext(ctx, "SELECT seq, hash FROM agenthost_audit_heads WHERE chain = ?", chain).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return seq, hash, err
}

func (c chainSource) Links(ctx context.Context, chain string, fn func(approvals.ChainLink) error) error {
	rows, err := c.db.QueryContext(ctx, "SELECT seq, prev_hash, hash, record FROM agenthost_audit WHERE chain = ? ORDER BY seq", chain)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var l approvals.ChainLink
		var rec string
		if err := rows.Scan(&l.Seq, &l.PrevHash, &l.Hash, &rec); err != nil {
			return err
		}
		l.Record = []byte(rec)
		if err := fn(l); err != nil {
			return err
		}
	}
	return rows.Err()
}
