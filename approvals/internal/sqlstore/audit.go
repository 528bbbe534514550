package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/internal/groupcommit"
)

// DefaultMaxBatch is how many audit records one transaction holds at most.
const DefaultMaxBatch = 512

// commitTimeout bounds one batch's transaction.
const commitTimeout = 30 * time.Second

const (
	selectHead  = "SELECT seq, hash FROM agenthost_audit_heads WHERE chain = ?"
	createHead  = "INSERT INTO agenthost_audit_heads (chain, seq, hash) VALUES (?, 0, '') ON CONFLICT (chain) DO NOTHING"
	putHead     = "INSERT INTO agenthost_audit_heads (chain, seq, hash) VALUES (?, ?, ?) ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, hash = excluded.hash"
	insertAudit = "INSERT INTO agenthost_audit (chain, seq, ts, session_id, prev_hash, hash, record) VALUES (?, ?, ?, ?, ?, ?, ?)"
	listChains  = "SELECT chain FROM agenthost_audit_heads UNION SELECT DISTINCT chain FROM agenthost_audit ORDER BY 1"
	selectLinks = "SELECT seq, prev_hash, hash, record FROM agenthost_audit WHERE chain = ? ORDER BY seq"
)

// Link is one audit record as its chain stores it.
type Link struct {
	auditlog.ChainLink
	TS        time.Time
	SessionID string
}

// AuditSink appends audit records to a database as a hash chain (see
// approvals.ChainHash; keyed links, approvals.ChainMAC, with a key). Write returns once the record's transaction
// committed: concurrent writers share one transaction (group commit). A
// failed commit fails every Write of its batch; it is not sticky.
type AuditSink struct {
	db      DB
	d       *Dialect
	chain   string
	key     []byte // nil: unkeyed links
	q       *queries
	closeDB func() error
	gc      *groupcommit.Committer[auditItem]
	// links, stmts and args are commit's buffers (the committer calls it
	// from one goroutine).
	links []Link
	stmts []Stmt
	args  []any
}

type auditItem struct {
	ts      time.Time
	session string
	line    []byte
}

var _ auditlog.Sink = (*AuditSink)(nil)

// OpenAuditSink returns a sink appending to chain ("" means
// approvals.DefaultChain) in db, which the caller has migrated, in
// transactions of at most maxBatch records (0 means DefaultMaxBatch),
// keyed with key (nil: unkeyed; a chain whose head is keyed then refuses
// every record, approvals.ErrChainKeyRequired). closeDB closes db when the
// sink closes, or when it fails to open.
func OpenAuditSink(ctx context.Context, db DB, d *Dialect, chain string, key []byte, maxBatch int, closeDB func() error) (*AuditSink, error) {
	if chain == "" {
		chain = auditlog.DefaultChain
	}
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	q := d.queries()
	if d.RowLocks {
		if _, err := db.Exec(ctx, q.createHead, chain); err != nil {
			_ = closeDB()
			return nil, fmt.Errorf("create the audit chain head: %w", err)
		}
	}
	if key != nil && len(key) < auditlog.MinChainKeyBytes {
		_ = closeDB()
		return nil, fmt.Errorf("the audit chain key is %d bytes, fewer than %d", len(key), auditlog.MinChainKeyBytes)
	}
	s := &AuditSink{db: db, d: d, chain: chain, key: key, q: q, closeDB: closeDB}
	s.gc = groupcommit.New(s.commit, maxBatch)
	return s, nil
}

// Write stores one record; it returns after the commit.
func (s *AuditSink) Write(ctx context.Context, r *auditlog.Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	err = s.gc.Write(context.WithoutCancel(ctx), auditItem{ts: r.TS, session: r.SessionID, line: line})
	if errors.Is(err, groupcommit.ErrClosed) {
		return auditlog.ErrSinkClosed
	}
	return err
}

// commit appends a batch: it reads the chain's head in a write
// transaction (where rows are locked, under the head's row lock: the head
// must exist), chains the records on, and stores them with the new head.
func (s *AuditSink) commit(ctx context.Context, batch []auditItem) error {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("write audit records to %s: %w", s.d.Name, err)
	}
	defer tx.Rollback(ctx)
	var seq int64
	var hash string
	if err := tx.Scan(ctx, []any{&seq, &hash}, s.q.lockHead, s.chain); err != nil && (s.d.RowLocks || !errors.Is(err, sql.ErrNoRows)) {
		return fmt.Errorf("read the audit chain head: %w", err)
	}
	if s.key == nil && strings.HasPrefix(hash, auditlog.ChainKeyedPrefix) {
		// An unkeyed record after keyed ones would break the chain.
		return fmt.Errorf("write audit records to %s: %w", s.d.Name, auditlog.ErrChainKeyRequired)
	}
	links := s.links[:0]
	for _, it := range batch {
		seq++
		prev := hash
		hash = auditlog.ChainLinkHash(s.key, prev, it.line)
		links = append(links, Link{ChainLink: auditlog.ChainLink{Seq: seq, PrevHash: prev, Hash: hash, Record: it.line}, TS: it.ts, SessionID: it.session})
	}
	stmts, args := s.stmts[:0], s.args[:0]
	if s.d.AppendAudit != nil {
		stmts = append(stmts, s.d.AppendAudit(s.chain, links)...)
	} else {
		args = slices.Grow(args, 7*len(links)) // one array for all rows
		for _, l := range links {
			args = append(args, s.chain, l.Seq, s.d.Time(l.TS), l.SessionID, l.PrevHash, l.Hash, string(l.Record))
			stmts = append(stmts, Stmt{s.q.insertAudit, args[len(args)-7 : len(args) : len(args)]})
		}
	}
	stmts = append(stmts, Stmt{s.q.putHead, []any{s.chain, seq, hash}})
	err = tx.Commit(ctx, stmts...)
	clear(links) // keep the buffers, not the records
	clear(stmts)
	clear(args)
	s.links, s.stmts, s.args = links[:0], stmts[:0], args[:0]
	if err != nil {
		return fmt.Errorf("write audit records to %s: %w", s.d.Name, err)
	}
	return nil
}

// Close writes what is queued and closes the database handle.
func (s *AuditSink) Close() error {
	if err := s.gc.Close(); err != nil {
		return auditlog.ErrSinkClosed
	}
	return s.closeDB()
}

// VerifyAudit checks every audit chain in db, keyed links with key.
func VerifyAudit(ctx context.Context, db DB, d *Dialect, key []byte) ([]auditlog.ChainReport, error) {
	return auditlog.VerifyChains(ctx, chainSource{db, d.queries()}, key)
}

type chainSource struct {
	db DB
	q  *queries
}

func (c chainSource) Chains(ctx context.Context) ([]string, error) {
	rows, err := c.db.Query(ctx, c.q.listChains)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var chain string
		if err := rows.Scan(&chain); err != nil {
			return nil, err
		}
		out = append(out, chain)
	}
	return out, rows.Err()
}

func (c chainSource) Head(ctx context.Context, chain string) (int64, string, error) {
	var seq int64
	var hash string
	err := c.db.Scan(ctx, []any{&seq, &hash}, c.q.selectHead, chain)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return seq, hash, err
}

func (c chainSource) Links(ctx context.Context, chain string, fn func(auditlog.ChainLink) error) error {
	rows, err := c.db.Query(ctx, c.q.selectLinks, chain)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var l auditlog.ChainLink
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
