// Package sharedstore keeps serve's sessions in PostgreSQL for every
// replica of the shared mode (docs/config.md, "serve.replica"): each
// session's record (its owner, subject, trust level, the names of its
// values and, with the operator's key, the values sealed with
// AES-256-GCM), its latest turn and whether it runs, and that turn's
// events, which any replica replays and follows (LISTEN/NOTIFY).
package sharedstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store keeps served sessions in PostgreSQL for every replica (the
// shared mode, docs/config.md "serve.replica"): a record per session (who
// owns it, its subject, trust level, the names of its values and, with a
// sealing key, the values sealed; its latest turn and whether it runs),
// and the latest turn's events, numbered per turn. A replica appends the
// events of the turns it runs; any replica replays them after a
// Last-Event-ID and follows new ones, woken by LISTEN/NOTIFY (one
// connection per replica) with a poll of FollowPoll as the safety net.
type Store struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{} // by turn id

	cancel   context.CancelFunc
	finished chan struct{}
}

// eventsChannel is the NOTIFY channel; the payload is a turn id.
const eventsChannel = "agenthost_turn_events"

// FollowPoll bounds how long a follower waits for a notification before
// it reads again (a notification lost while the listener reconnected).
const FollowPoll = time.Second

var sharedSchema = []string{
	`CREATE TABLE IF NOT EXISTS agenthost_served_sessions (
		session_id   TEXT PRIMARY KEY,
		owner        TEXT NOT NULL,
		creator      TEXT NOT NULL,
		subject      TEXT NOT NULL,
		trust_level  INT NOT NULL,
		value_names  TEXT NOT NULL,
		sealed       TEXT NOT NULL DEFAULT '',
		created_ms   BIGINT NOT NULL,
		turn_id      TEXT NOT NULL DEFAULT '',
		turn_by      TEXT NOT NULL DEFAULT '',
		turn_running BOOLEAN NOT NULL DEFAULT false
	)`,
	`CREATE INDEX IF NOT EXISTS agenthost_served_sessions_creator ON agenthost_served_sessions (creator)`,
	`CREATE TABLE IF NOT EXISTS agenthost_turn_events (
		turn_id TEXT NOT NULL,
		seq     BIGINT NOT NULL,
		frame   BYTEA NOT NULL,
		PRIMARY KEY (turn_id, seq)
	)`,
}

// Open creates the store's tables if they are missing and starts the
// replica's LISTEN connection (Close ends it).
func Open(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	for _, q := range sharedSchema {
		if _, err := pool.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("serve: create the shared session tables: %w", err)
		}
	}
	lctx, cancel := context.WithCancel(context.Background())
	st := &Store{pool: pool, waiters: map[string]map[chan struct{}]struct{}{}, cancel: cancel, finished: make(chan struct{})}
	ready := make(chan struct{})
	go st.listen(lctx, ready)
	select {
	case <-ready:
	case <-ctx.Done():
		st.Close()
		return nil, ctx.Err()
	}
	return st, nil
}

// Close stops listening and waits for the listener to end.
func (st *Store) Close() {
	st.cancel()
	<-st.finished
}

// listen owns the LISTEN connection: it wakes the followers of each turn
// notified, and every follower when it (re)connects.
func (st *Store) listen(ctx context.Context, ready chan struct{}) {
	defer close(st.finished)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := st.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+eventsChannel)
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			st.wakeAll()
			for {
				n, werr := conn.Conn().WaitForNotification(ctx)
				if werr != nil {
					break
				}
				st.wake(n.Payload)
			}
		}
		if conn != nil {
			_ = conn.Hijack().Close(context.Background()) // it holds a LISTEN
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// Watch returns a channel closed at the turn's next notification, and
// the function that stops watching.
func (st *Store) Watch(turnID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	st.mu.Lock()
	set := st.waiters[turnID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		st.waiters[turnID] = set
	}
	set[ch] = struct{}{}
	st.mu.Unlock()
	return ch, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if set, ok := st.waiters[turnID]; ok {
			if _, ok := set[ch]; ok {
				delete(set, ch)
				close(ch)
			}
			if len(set) == 0 {
				delete(st.waiters, turnID)
			}
		}
	}
}

func (st *Store) wake(turnID string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for ch := range st.waiters[turnID] {
		close(ch)
	}
	delete(st.waiters, turnID)
}

func (st *Store) wakeAll() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for id, set := range st.waiters {
		for ch := range set {
			close(ch)
		}
		delete(st.waiters, id)
	}
}

// Record is a served session as every replica reads it.
type Record struct {
	ID         string
	Owner      string
	Creator    string
	Subject    string
	TrustLevel int
	ValueNames []string
	// Sealed is the session values sealed with the operator's key
	// (sealValues), or empty.
	Sealed  string
	Created time.Time

	TurnID      string
	TurnBy      string
	TurnRunning bool
}

// Errors of the store's writes, for the callers to branch on.
var (
	// ErrTurnRunning refuses a turn while the session's turn runs (the
	// memory mode refuses with it too: one answer in both).
	ErrTurnRunning       = errors.New("a turn is already running in this session; wait for its session_end")
	ErrNoSession         = errors.New("no such session")
	ErrTooManySessions   = errors.New("the replicas hold serve.maxSessions sessions")
	ErrTooManyForCreator = errors.New("this identity holds serve.maxSessionsPerIdentity sessions")
)

// Create stores a new session's record, unless the store holds maxTotal
// sessions or maxPer of its creator's.
func (st *Store) Create(ctx context.Context, rec Record, maxTotal, maxPer int) error {
	names, err := json.Marshal(rec.ValueNames)
	if err != nil {
		return err
	}
	var total, mine int
	var inserted bool
	err = st.pool.QueryRow(ctx, `WITH counts AS (
			SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE creator = $3) AS mine FROM agenthost_served_sessions),
		ins AS (
			INSERT INTO agenthost_served_sessions (session_id, owner, creator, subject, trust_level, value_names, sealed, created_ms)
			SELECT $1, $2, $3, $4, $5, $6, $7, $8 FROM counts WHERE counts.total < $9 AND counts.mine < $10
			RETURNING 1)
		SELECT counts.total, counts.mine, EXISTS (SELECT 1 FROM ins) FROM counts`,
		rec.ID, rec.Owner, rec.Creator, rec.Subject, rec.TrustLevel, string(names), rec.Sealed, rec.Created.UnixMilli(),
		maxTotal, maxPer).Scan(&total, &mine, &inserted)
	switch {
	case err != nil:
		return fmt.Errorf("serve: store the session: %w", err)
	case inserted:
		return nil
	case mine >= maxPer:
		return ErrTooManyForCreator
	default:
		return ErrTooManySessions
	}
}

// Load reads a session's record (ErrNoSession).
func (st *Store) Load(ctx context.Context, id string) (Record, error) {
	rec := Record{ID: id}
	var f recordFields
	err := st.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM agenthost_served_sessions WHERE session_id = $1`, id).Scan(f.dest(&rec)...)
	if err == nil {
		err = f.finish(&rec)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, ErrNoSession
	}
	if err != nil {
		return Record{}, fmt.Errorf("serve: read the session: %w", err)
	}
	return rec, nil
}

// recordColumns are a record's columns as recordFields.dest scans them.
const recordColumns = `owner, creator, subject, trust_level, value_names, sealed, created_ms, turn_id, turn_by, turn_running`

// recordFields holds the columns of a record scanned as stored.
type recordFields struct {
	names   string
	created int64
}

func (f *recordFields) dest(rec *Record) []any {
	return []any{&rec.Owner, &rec.Creator, &rec.Subject, &rec.TrustLevel, &f.names, &rec.Sealed, &f.created, &rec.TurnID, &rec.TurnBy, &rec.TurnRunning}
}

func (f *recordFields) finish(rec *Record) error {
	if err := json.Unmarshal([]byte(f.names), &rec.ValueNames); err != nil {
		return err
	}
	rec.Created = time.UnixMilli(f.created).UTC()
	return nil
}

// Remove deletes a session's record and its latest turn's events.
func (st *Store) Remove(ctx context.Context, id string) error {
	_, err := st.pool.Exec(ctx, `WITH gone AS (DELETE FROM agenthost_served_sessions WHERE session_id = $1 RETURNING turn_id)
		DELETE FROM agenthost_turn_events WHERE turn_id IN (SELECT turn_id FROM gone)`, id)
	if err != nil {
		return fmt.Errorf("serve: delete the session: %w", err)
	}
	return nil
}

// Claim reads a session's record (ErrNoSession) and, in the same
// statement, makes turnID its running turn when the caller may start it
// there and then: owner owns it, no turn runs, and the value names the
// request gives (given; nil: none given) are the session's, or none were
// given and the session has none. The previous turn's events are dropped
// with the claim, as StartTurn drops them. claimed false leaves the
// record as it was (rec is what it holds): the caller decides with it as
// it would with Load's, and StartTurn claims it then (values sealed in
// the record, which only the caller can open; a turn that runs; another
// owner; values that are not the session's).
func (st *Store) Claim(ctx context.Context, id, owner, turnID, by string, given []string) (rec Record, claimed bool, err error) {
	if given == nil {
		given = []string{}
	}
	names, err := json.Marshal(given)
	if err != nil {
		return Record{}, false, err
	}
	rec = Record{ID: id}
	var f recordFields
	// The row is locked first (FOR UPDATE: a claim waiting on another
	// reads the row that claim left), then updated from what was locked.
	err = st.pool.QueryRow(ctx, `WITH cur AS (
			SELECT session_id, `+recordColumns+` FROM agenthost_served_sessions WHERE session_id = $1 FOR UPDATE),
		claim AS (
			UPDATE agenthost_served_sessions s SET turn_id = $2, turn_by = $3, turn_running = true
			FROM cur WHERE s.session_id = cur.session_id AND cur.owner = $4 AND NOT cur.turn_running AND cur.value_names = $5
			RETURNING cur.turn_id AS prev),
		dropped AS (DELETE FROM agenthost_turn_events WHERE turn_id IN (SELECT prev FROM claim WHERE prev <> ''))
		SELECT `+recordColumns+`, EXISTS (SELECT 1 FROM claim) FROM cur`,
		id, turnID, by, owner, string(names)).Scan(append(f.dest(&rec), &claimed)...)
	if err == nil {
		// A claimed record's names are the given ones, JSON already.
		err = f.finish(&rec)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Record{}, false, ErrNoSession
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("serve: read the session: %w", err)
	}
	return rec, claimed, nil
}

// StartTurn makes turnID the session's running turn, unless one runs
// (ErrTurnRunning) or the session is gone (ErrNoSession); the previous
// turn's events are dropped (a session keeps its latest turn's).
func (st *Store) StartTurn(ctx context.Context, id, turnID, by string) error {
	var prev string
	err := st.pool.QueryRow(ctx, `WITH old AS (SELECT turn_id FROM agenthost_served_sessions WHERE session_id = $1 AND NOT turn_running FOR UPDATE)
		UPDATE agenthost_served_sessions s SET turn_id = $2, turn_by = $3, turn_running = true
		FROM old WHERE s.session_id = $1 RETURNING old.turn_id`, id, turnID, by).Scan(&prev)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, lerr := st.Load(ctx, id); errors.Is(lerr, ErrNoSession) {
			return ErrNoSession
		}
		return ErrTurnRunning
	}
	if err != nil {
		return fmt.Errorf("serve: start the turn: %w", err)
	}
	if prev != "" {
		if _, err := st.pool.Exec(ctx, `DELETE FROM agenthost_turn_events WHERE turn_id = $1`, prev); err != nil {
			return fmt.Errorf("serve: drop the previous turn's events: %w", err)
		}
	}
	return nil
}

// EndTurn records that the session's turn turnID has ended, with its
// last event (frame, number seq; nil: none), in one round trip.
func (st *Store) EndTurn(ctx context.Context, id, turnID string, seq int64, frame []byte) error {
	b := &pgx.Batch{}
	if frame != nil {
		b.Queue(`INSERT INTO agenthost_turn_events (turn_id, seq, frame) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, turnID, seq, frame)
	}
	b.Queue(`UPDATE agenthost_served_sessions SET turn_running = false WHERE session_id = $1 AND turn_id = $2`, id, turnID)
	b.Queue(`SELECT pg_notify($1, $2)`, eventsChannel, turnID)
	if err := st.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("serve: end the turn: %w", err)
	}
	return nil
}

// LastSeq is the number of the turn's last stored event (0: none).
func (st *Store) LastSeq(ctx context.Context, turnID string) (int64, error) {
	var n int64
	err := st.pool.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM agenthost_turn_events WHERE turn_id = $1`, turnID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("serve: read the turn's events: %w", err)
	}
	return n, nil
}

// AppendEvents stores frames as the turn's events first, first+1, ...
// (numbers stored already are kept) and notifies the followers, in one
// round trip.
func (st *Store) AppendEvents(ctx context.Context, turnID string, first int64, frames [][]byte) error {
	if len(frames) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for i, f := range frames {
		b.Queue(`INSERT INTO agenthost_turn_events (turn_id, seq, frame) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, turnID, first+int64(i), f)
	}
	if last := first + int64(len(frames)) - 1; last > eventlog.MaxTurnEvents {
		// A turn keeps its newest eventlog.MaxTurnEvents events, as in memory.
		b.Queue(`DELETE FROM agenthost_turn_events WHERE turn_id = $1 AND seq <= $2`, turnID, last-eventlog.MaxTurnEvents)
	}
	b.Queue(`SELECT pg_notify($1, $2)`, eventsChannel, turnID)
	if err := st.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("serve: store the turn's events: %w", err)
	}
	return nil
}

// MaxReplay bounds the events one read of the store returns.
const MaxReplay = 256

// Since returns the turn's stored events numbered after `after`, at most
// MaxReplay, in order, with the number of the last; ErrEventsDropped when
// the one after `after` was dropped (eventlog.MaxTurnEvents).
func (st *Store) Since(ctx context.Context, turnID string, after int64) ([][]byte, int64, error) {
	rows, err := st.pool.Query(ctx, `SELECT seq, frame FROM agenthost_turn_events WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		turnID, after, MaxReplay)
	if err != nil {
		return nil, after, fmt.Errorf("serve: read the turn's events: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	last := after
	for rows.Next() {
		var seq int64
		var f []byte
		if err := rows.Scan(&seq, &f); err != nil {
			return nil, after, fmt.Errorf("serve: read the turn's events: %w", err)
		}
		if len(out) == 0 && seq > after+1 {
			return nil, after, ErrEventsDropped
		}
		out, last = append(out, f), seq
	}
	return out, last, rows.Err()
}

// ErrEventsDropped is Since's error for a reader behind the events kept.
var ErrEventsDropped = errors.New("events after this id were dropped")

// ResumeTurn makes turnID the session's running turn again (a turn taken
// up after its replica stopped).
func (st *Store) ResumeTurn(ctx context.Context, id, turnID string) error {
	tag, err := st.pool.Exec(ctx, `UPDATE agenthost_served_sessions SET turn_id = $2, turn_running = true WHERE session_id = $1`, id, turnID)
	if err != nil {
		return fmt.Errorf("serve: resume the turn: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNoSession
	}
	return nil
}
