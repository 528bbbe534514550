package durable

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
)

// Store is the durable session store: each session's conversation (what
// the model saw and said, never a secure value or a session value), a
// line of facts per session for listing, and the ledger of durable
// calls' sends. It is a host.SequencedHistory. Safe for concurrent use.
type Store struct {
	db *sql.DB
	d  dialect

	// lazy, when set, is a pool whose commits never wait for the flush
	// (PostgreSQL): the index of unfinished turns and a turn's appends are
	// written through it (commit.go).
	lazy *sql.DB
	// asyncCommit: the pool commits without waiting for the flush.
	asyncCommit bool
	// appends are the append statements' texts by message count (and
	// whether they write the session's line).
	mu      sync.Mutex
	appends map[appendKey]string
}

var _ host.SequencedHistory = (*Store)(nil)

// dialect is what differs between PostgreSQL and SQLite here.
type dialect struct {
	name string
	// rebind turns $1, $2, ... into the driver's placeholders.
	rebind func(string) string
}

var (
	postgresDialect = dialect{name: "postgres", rebind: func(q string) string { return q }}
	sqliteDialect   = dialect{name: "sqlite", rebind: func(q string) string { return strings.ReplaceAll(q, "$", "?") }}
)

// schema creates the store's tables (both dialects take the same text).
var schema = []string{
	`CREATE TABLE IF NOT EXISTS agenthost_sessions (
		session_id TEXT PRIMARY KEY,
		subject    TEXT NOT NULL DEFAULT '',
		dir        TEXT NOT NULL DEFAULT '',
		title      TEXT NOT NULL DEFAULT '',
		created_ms BIGINT NOT NULL,
		updated_ms BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS agenthost_sessions_dir ON agenthost_sessions (dir, updated_ms)`,
	`CREATE TABLE IF NOT EXISTS agenthost_messages (
		session_id TEXT NOT NULL,
		seq        BIGINT NOT NULL,
		message    TEXT NOT NULL,
		created_ms BIGINT NOT NULL,
		PRIMARY KEY (session_id, seq)
	)`,
	`CREATE TABLE IF NOT EXISTS agenthost_call_sends (
		call_key   TEXT PRIMARY KEY,
		sends      BIGINT NOT NULL,
		updated_ms BIGINT NOT NULL
	)`,
	// A session's unfinished turns, for listing them by one indexed read
	// (turns.go); the engine's workflow status says whether each still is.
	`CREATE TABLE IF NOT EXISTS agenthost_turns (
		turn_id    TEXT PRIMARY KEY,
		session_id TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS agenthost_turns_session ON agenthost_turns (session_id, turn_id)`,
	`CREATE TABLE IF NOT EXISTS agenthost_call_tasks (
		call_key   TEXT PRIMARY KEY,
		task_id    TEXT NOT NULL,
		updated_ms BIGINT NOT NULL
	)`,
}

func newStore(ctx context.Context, db *sql.DB, d dialect) (*Store, error) {
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("durable: create the session store: %w", err)
		}
	}
	return &Store{db: db, d: d, appends: map[appendKey]string{}}, nil
}

// openSQLite opens the SQLite file at path (creating its folder, mode
// 0700) with WAL and a busy timeout, as the engine expects of a handle it
// is given.
func openSQLite(path string) (*sql.DB, error) {
	if dir := filepath.Dir(path); dir != "" && dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("durable: %w", err)
		}
	}
	dsn := "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)&_pragma=synchronous(NORMAL)&_pragma=journal_mode(WAL)"
	db := openCachedSQLite(dsn) // sqlitestmt.go
	db.SetMaxOpenConns(8)
	if err := db.Ping(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("durable: open SQLite %s: %w", path, err)
	}
	_ = os.Chmod(path, 0o600)
	return db, nil
}

func nowMs() int64 { return time.Now().UnixMilli() }

// Load implements host.History.
func (s *Store) Load(ctx context.Context, sessionID string) ([]model.Message, error) {
	rows, err := s.db.QueryContext(anyCommits(ctx), s.d.rebind(`SELECT message FROM agenthost_messages WHERE session_id = $1 ORDER BY seq`), sessionID)
	if err != nil {
		return nil, fmt.Errorf("durable: load conversation: %w", err)
	}
	defer rows.Close()
	var msgs []model.Message
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, fmt.Errorf("durable: load conversation: %w", err)
		}
		var m model.Message
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			return nil, fmt.Errorf("durable: load conversation: message %d: %w", len(msgs), err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("durable: load conversation: %w", err)
	}
	return msgs, nil
}

// Append implements host.History: msgs go after the conversation's last
// message.
func (s *Store) Append(ctx context.Context, sessionID string, msgs ...model.Message) error {
	return s.append(ctx, sessionID, -1, msgs)
}

// AppendAt implements host.SequencedHistory.
func (s *Store) AppendAt(ctx context.Context, sessionID string, at int, msgs ...model.Message) error {
	if at < 0 {
		return fmt.Errorf("durable: append at %d", at)
	}
	return s.append(ctx, sessionID, at, msgs)
}

// append stores msgs from position at (-1: the end) in one statement:
// positions already stored are kept, and an append that would leave a gap
// stores nothing (and is refused).
func (s *Store) append(ctx context.Context, sessionID string, at int, msgs []model.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	now := nowMs()
	args := make([]any, 0, 3+2*len(msgs))
	args = append(args, sessionID, at, now)
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("durable: append: %w", err)
		}
		args = append(args, string(b))
	}
	// The session's line is written with its first message: in the same
	// statement on PostgreSQL.
	line := at <= 0
	db := s.db
	run := turnOf(ctx)
	ends := false
	if s.lazy != nil && run != nil {
		db = s.lazy // a turn's appends are lazy: commit.go
		// The turn's answer, its last message, takes the turn out of the
		// index of unfinished turns in the same statement (turns.go).
		if ends = at > 0 && endsTurn(msgs); ends {
			args = append(args, run.id)
		}
	}
	res, err := db.ExecContext(ctx, s.appendQuery(len(msgs), line && s.d.name == "postgres", ends), args...)
	if err != nil {
		return fmt.Errorf("durable: append: %w", err)
	}
	if ends {
		run.unlisted.Store(true)
	}
	if n, _ := res.RowsAffected(); n == 0 && at > 0 {
		// Nothing new: a replay of stored messages, or a gap.
		var next int64
		if err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT COALESCE(MAX(seq) + 1, 0) FROM agenthost_messages WHERE session_id = $1`), sessionID).Scan(&next); err != nil {
			return fmt.Errorf("durable: append: %w", err)
		}
		if int64(at) > next {
			return fmt.Errorf("durable: append at %d, but the conversation has %d messages", at, next)
		}
	}
	if line && s.d.name != "postgres" {
		if _, err := s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO agenthost_sessions (session_id, created_ms, updated_ms) VALUES ($1, $2, $2)
			ON CONFLICT (session_id) DO NOTHING`), sessionID, now); err != nil {
			return fmt.Errorf("durable: append: %w", err)
		}
	}
	return nil
}

// maxAppendQueries bounds the append statements' texts kept (one per
// message count).
const maxAppendQueries = 16

// appendKey names an append statement.
type appendKey struct {
	n          int
	line, ends bool
}

// endsTurn reports whether msgs, appended by a turn's run, are its last:
// the model's answer without calls, after which the turn loop ends the
// turn (host/internal/turn.Run) and appends nothing more.
func endsTurn(msgs []model.Message) bool {
	return len(msgs) == 1 && msgs[0].Role == model.RoleAssistant && len(msgs[0].ToolCalls) == 0
}

// appendQuery is the statement appending n messages: $1 the session, $2
// the position (-1: the end), $3 the time, $4... the messages. It inserts
// them at their positions from the start, unless that leaves a gap after
// the conversation's last message. With line (PostgreSQL) it also writes
// the session's line when there is none; with ends (PostgreSQL), the
// turn's last message, it removes the turn (the parameter after the
// messages) from the index of unfinished turns.
//
// It is run by its text, not as a database/sql *Stmt: each driver keeps
// its connections' statements prepared by their text (pgx's statement
// cache; sqlitestmt.go), while a *Stmt on the PostgreSQL pool (whose
// database/sql handle keeps no idle connection) was prepared again and
// deallocated on every append, two more round trips each.
func (s *Store) appendQuery(n int, line, ends bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := appendKey{n, line, ends}
	if q, ok := s.appends[key]; ok {
		return q
	}
	// PostgreSQL is told the types of the position, the time and the
	// messages; SQLite names VALUES columns column1, column2.
	at, now, k, m, values := "$2", "$3", "v.column1", "v.column2", "AS v"
	if s.d.name == "postgres" {
		at, now, k, m, values = "$2::bigint", "$3::bigint", "v.k", "v.m::text", "AS v(k, m)"
	}
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf("(%d, $%d)", i, 4+i))
	}
	start := `(CASE WHEN ` + at + ` < 0 THEN (SELECT COALESCE(MAX(seq) + 1, 0) FROM agenthost_messages WHERE session_id = $1) ELSE ` + at + ` END)`
	q := `INSERT INTO agenthost_messages (session_id, seq, message, created_ms)
		SELECT $1, ` + start + ` + ` + k + `, ` + m + `, ` + now + ` FROM (VALUES ` + strings.Join(rows, ", ") + `) ` + values + `
		WHERE ` + at + ` <= 0 OR EXISTS (SELECT 1 FROM agenthost_messages WHERE session_id = $1 AND seq = ` + at + ` - 1)
		ON CONFLICT (session_id, seq) DO NOTHING`
	var with []string
	if line {
		with = append(with, `line AS (INSERT INTO agenthost_sessions (session_id, created_ms, updated_ms) VALUES ($1, `+now+`, `+now+`)
			ON CONFLICT (session_id) DO NOTHING)`)
	}
	if ends {
		with = append(with, fmt.Sprintf(`listed AS (DELETE FROM agenthost_turns WHERE turn_id = $%d)`, 4+n))
	}
	if len(with) > 0 {
		q = `WITH ` + strings.Join(with, ", ") + ` ` + q
	}
	q = s.d.rebind(q)
	if len(s.appends) < maxAppendQueries {
		s.appends[key] = q
	}
	return q
}

// sent counts one more send of the call key and returns how many there
// were before.
func (s *Store) sent(ctx context.Context, key string) (int, error) {
	q := s.d.rebind(`INSERT INTO agenthost_call_sends (call_key, sends, updated_ms) VALUES ($1, 1, $2)
		ON CONFLICT (call_key) DO UPDATE SET sends = agenthost_call_sends.sends + 1, updated_ms = excluded.updated_ms
		RETURNING sends`)
	var n int64
	if !s.asyncCommit {
		if err := s.db.QueryRowContext(ctx, q, key, nowMs()).Scan(&n); err != nil {
			return 0, fmt.Errorf("durable: record the send: %w", err)
		}
		return int(n - 1), nil
	}
	// The pool's commits do not wait for the flush (Options.AsyncCommit):
	// this one must, before the call leaves.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("durable: record the send: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit TO on`); err != nil {
		return 0, fmt.Errorf("durable: record the send: %w", err)
	}
	if err := tx.QueryRowContext(ctx, q, key, nowMs()).Scan(&n); err != nil {
		return 0, fmt.Errorf("durable: record the send: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("durable: record the send: %w", err)
	}
	return int(n - 1), nil
}

// SessionInfo is one stored session's line.
type SessionInfo struct {
	ID       string    `json:"id"`
	Subject  string    `json:"subject"`
	Dir      string    `json:"dir"`
	Title    string    `json:"title"`
	Messages int       `json:"messages"`
	Created  time.Time `json:"createdAt"`
	Updated  time.Time `json:"updatedAt"`
}

// ErrUnknownSession is returned for a session the store does not hold.
var ErrUnknownSession = errors.New("no such session")

// Describe records (or updates) a session's facts: its subject, the
// folder it runs in and a title (the first prompt, say). Messages are
// counted by the store.
func (s *Store) Describe(ctx context.Context, info SessionInfo) error {
	now := nowMs()
	_, err := s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO agenthost_sessions (session_id, subject, dir, title, created_ms, updated_ms)
		VALUES ($1, $2, $3, $4, $5, $5)
		ON CONFLICT (session_id) DO UPDATE SET subject = excluded.subject, dir = excluded.dir,
			title = CASE WHEN agenthost_sessions.title = '' THEN excluded.title ELSE agenthost_sessions.title END,
			updated_ms = excluded.updated_ms`), info.ID, info.Subject, info.Dir, info.Title, now)
	if err != nil {
		return fmt.Errorf("durable: describe session: %w", err)
	}
	return nil
}

// ListOptions select Sessions.
type ListOptions struct {
	// Dir, when set, lists only the sessions run in that folder.
	Dir string
	// Limit caps the answer (0: 1,000).
	Limit int
}

// Sessions lists stored sessions, the most recently updated first.
func (s *Store) Sessions(ctx context.Context, opts ListOptions) ([]SessionInfo, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT s.session_id, s.subject, s.dir, s.title, s.created_ms,
		COALESCE((SELECT MAX(m.created_ms) FROM agenthost_messages m WHERE m.session_id = s.session_id), s.updated_ms),
		(SELECT COUNT(*) FROM agenthost_messages m WHERE m.session_id = s.session_id)
		FROM agenthost_sessions s`
	args := []any{}
	if opts.Dir != "" {
		q += ` WHERE s.dir = $1`
		args = append(args, opts.Dir)
	}
	q += fmt.Sprintf(` ORDER BY 6 DESC, s.session_id LIMIT %d`, limit)
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("durable: list sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionInfo
	for rows.Next() {
		var si SessionInfo
		var created, updated int64
		if err := rows.Scan(&si.ID, &si.Subject, &si.Dir, &si.Title, &created, &updated, &si.Messages); err != nil {
			return nil, fmt.Errorf("durable: list sessions: %w", err)
		}
		si.Created, si.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
		out = append(out, si)
	}
	return out, rows.Err()
}

// Session returns one stored session's line (ErrUnknownSession).
func (s *Store) Session(ctx context.Context, id string) (SessionInfo, error) {
	list, err := s.sessionsWhere(ctx, id)
	if err != nil {
		return SessionInfo{}, err
	}
	if len(list) == 0 {
		return SessionInfo{}, fmt.Errorf("%w: %s", ErrUnknownSession, id)
	}
	return list[0], nil
}

func (s *Store) sessionsWhere(ctx context.Context, id string) ([]SessionInfo, error) {
	var si SessionInfo
	var created, updated int64
	err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT s.session_id, s.subject, s.dir, s.title, s.created_ms,
		COALESCE((SELECT MAX(m.created_ms) FROM agenthost_messages m WHERE m.session_id = s.session_id), s.updated_ms),
		(SELECT COUNT(*) FROM agenthost_messages m WHERE m.session_id = s.session_id)
		FROM agenthost_sessions s WHERE s.session_id = $1`), id).Scan(&si.ID, &si.Subject, &si.Dir, &si.Title, &created, &updated, &si.Messages)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("durable: session: %w", err)
	}
	si.Created, si.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return []SessionInfo{si}, nil
}

// DeleteSession removes a session's conversation and line
// (ErrUnknownSession when there is none). Its turns' checkpoints stay
// with the engine until their workflows are deleted (Engine.DeleteSession
// does both).
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("durable: delete session: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM agenthost_messages WHERE session_id = $1`), id); err != nil {
		return fmt.Errorf("durable: delete session: %w", err)
	}
	res, err := tx.ExecContext(ctx, s.d.rebind(`DELETE FROM agenthost_sessions WHERE session_id = $1`), id)
	if err != nil {
		return fmt.Errorf("durable: delete session: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %s", ErrUnknownSession, id)
	}
	return tx.Commit()
}

// forgetSends drops the send ledger of the turns' calls and their tasks
// (keys are the turn id, a slash and the call id).
func (s *Store) forgetSends(ctx context.Context, turnIDs []string) error {
	for _, id := range turnIDs {
		for _, table := range []string{"agenthost_call_sends", "agenthost_call_tasks"} {
			if _, err := s.db.ExecContext(ctx, s.d.rebind(`DELETE FROM `+table+` WHERE call_key >= $1 AND call_key < $2`), id+"/", id+"0"); err != nil {
				return fmt.Errorf("durable: delete sends: %w", err)
			}
		}
	}
	return nil
}

// sentTask records the MCP task the call key created (the last one, if a
// resumed call's server answered with another).
func (s *Store) sentTask(ctx context.Context, key, taskID string) error {
	q := s.d.rebind(`INSERT INTO agenthost_call_tasks (call_key, task_id, updated_ms) VALUES ($1, $2, $3)
		ON CONFLICT (call_key) DO UPDATE SET task_id = excluded.task_id, updated_ms = excluded.updated_ms`)
	if _, err := s.db.ExecContext(ctx, q, key, taskID, nowMs()); err != nil {
		return fmt.Errorf("durable: record the task: %w", err)
	}
	return nil
}

// taskOf is the task recorded for the call key, or "".
func (s *Store) taskOf(ctx context.Context, key string) (string, error) {
	var id string
	err := s.db.QueryRowContext(anyCommits(ctx), s.d.rebind(`SELECT task_id FROM agenthost_call_tasks WHERE call_key = $1`), key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("durable: read the task: %w", err)
	}
	return id, nil
}

// OpenStore opens the session store alone (no engine) in the SQLite file
// at path: for listing, showing and looking sessions up. Close it.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	db, err := openSQLite(path)
	if err != nil {
		return nil, err
	}
	s, err := newStore(ctx, db, sqliteDialect)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes a store opened with OpenStore (an engine's store closes
// with the engine).
func (s *Store) Close() error { return s.db.Close() }
