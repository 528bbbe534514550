package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/internal/groupcommit"
)

// DefaultMaxBatch is how many audit records one transaction holds at most.
const DefaultMaxBatch = 512

// commitTimeout bounds one batch's transaction.
const commitTimeout = 30 * time.Second

// AuditOptions configure an AuditSink.
type AuditOptions struct {
	// Chain names the hash chain to append to; "" means
	// approvals.DefaultChain. Every replica appends to the same chain.
	Chain string
	// MaxBatch caps the records per transaction; 0 means DefaultMaxBatch.
	MaxBatch int
}

// AuditSink appends audit records to PostgreSQL as a hash chain (see
// approvals.ChainHash). Write returns once the record's transaction
// committed: concurrent writers share one transaction (group commit), so
// throughput grows with concurrency while every record is stored before
// its call goes on. A failed commit fails every Write of its batch (the
// host then runs none of those calls); it is not sticky.
type AuditSink struct {
	pool  *pgxpool.Pool
	chain string
	gc    *groupcommit.Committer[auditItem]
}

type auditItem struct {
	ts      time.Time
	session string
	line    []byte
}

var _ approvals.Sink = (*AuditSink)(nil)

// OpenAuditSink connects to dsn and applies the migrations it lacks.
func OpenAuditSink(ctx context.Context, dsn string, opts AuditOptions) (*AuditSink, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if opts.Chain == "" {
		opts.Chain = approvals.DefaultChain
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if _, err := pool.Exec(ctx, "INSERT INTO agenthost_audit_heads (chain, seq, hash) VALUES ($1, 0, '') ON CONFLICT (chain) DO NOTHING", opts.Chain); err != nil {
		pool.Close()
		return nil, fmt.Errorf("create the audit chain head: %w", err)
	}
	s := &AuditSink{pool: pool, chain: opts.Chain}
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

// commit appends a batch in two round trips: BEGIN and the head's row
// lock; then the rows, the new head and COMMIT, pipelined.
func (s *AuditSink) commit(ctx context.Context, batch []auditItem) error {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("write audit records to PostgreSQL: %w", err)
	}
	// A connection left inside a transaction by a failure is closed by
	// the pool on release rather than reused.
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.Exec(context.Background(), "ROLLBACK")
		}
	}()
	var seq int64
	var hash string
	first := &pgx.Batch{}
	first.Queue("BEGIN")
	first.Queue("SELECT seq, hash FROM agenthost_audit_heads WHERE chain = $1 FOR UPDATE", s.chain)
	br := conn.SendBatch(ctx, first)
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&seq, &hash)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read the audit chain head: %w", err)
	}
	n := len(batch)
	seqs, tss, sessions, prevs, hashes, records := make([]int64, n), make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, it := range batch {
		seq++
		seqs[i], tss[i], sessions[i], prevs[i], records[i] = seq, it.ts.UTC(), it.session, hash, string(it.line)
		hash = approvals.ChainHash(hash, it.line)
		hashes[i] = hash
	}
	second := &pgx.Batch{}
	second.Queue(`INSERT INTO agenthost_audit (chain, seq, ts, session_id, prev_hash, hash, record)
		SELECT $1, * FROM unnest($2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[])`,
		s.chain, seqs, tss, sessions, prevs, hashes, records)
	second.Queue("UPDATE agenthost_audit_heads SET seq = $2, hash = $3 WHERE chain = $1", s.chain, seq, hash)
	second.Queue("COMMIT")
	br = conn.SendBatch(ctx, second)
	for range 3 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write audit records to PostgreSQL: %w", err)
	}
	committed = true
	return nil
}

// Close writes what is queued and closes the connection pool.
func (s *AuditSink) Close() error {
	if err := s.gc.Close(); err != nil {
		return approvals.ErrSinkClosed
	}
	s.pool.Close()
	return nil
}

// VerifyAudit checks every audit chain in the database at dsn.
func VerifyAudit(ctx context.Context, dsn string) ([]approvals.ChainReport, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return approvals.VerifyChains(ctx, chainSource{pool})
}

type chainSource struct{ pool *pgxpool.Pool }

func (c chainSource) Chains(ctx context.Context) ([]string, error) {
	rows, err := c.pool.Query(ctx, "SELECT chain FROM agenthost_audit_heads UNION SELECT DISTINCT chain FROM agenthost_audit ORDER BY 1")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (c chainSource) Head(ctx context.Context, chain string) (int64, string, error) {
	var seq int64
	var hash string
	err := c.pool.QueryRow(ctx, "SELECT seq, hash FROM agenthost_audit_heads WHERE chain = $1", chain).Scan(&seq, &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	return seq, hash, err
}

func (c chainSource) Links(ctx context.Context, chain string, fn func(approvals.ChainLink) error) error {
	rows, err := c.pool.Query(ctx, "SELECT seq, prev_hash, hash, record FROM agenthost_audit WHERE chain = $1 ORDER BY seq", chain)
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
