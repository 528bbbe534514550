// Package durable owns agenthost's durable execution engine: the
// host.Durability that runs turns as DBOS Transact workflows on
// PostgreSQL or SQLite (pure Go), and the durable session store beside it
// (conversations, the ledger of durable calls' sends). A program that does
// not import it links neither DBOS nor a database driver for it.
//
// What is stored, what never is, and how a turn is taken up again are in
// docs/durable.md.
package durable

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // SQLite system databases
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agenthost/agenthost/approvals/pgstore"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
	"github.com/agenthost/agenthost/host"
)

// Options configure Open.
type Options struct {
	// ExecutorID names this process to the engine: at start it takes up
	// the unfinished turns that an executor of the same id left (a
	// restarted process, a rolling deploy). Empty is "local".
	ExecutorID string
	// AppVersion is the engine's application version: turns are taken up
	// only by a process of the same version. Empty is Version.
	AppVersion string
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
	// ShutdownTimeout bounds Close's wait for running turns to stop
	// (default 10 s).
	ShutdownTimeout time.Duration
	// AsyncCommit (PostgreSQL) commits every write of the engine's pool
	// without waiting for the database's WAL flush (synchronous_commit
	// off), the model steps' checkpoints and the engine's own records too;
	// only the send ledger still waits. Without it, only the checkpoints
	// whose loss a later flushed write covers are lazy (a call's outcome,
	// the turn's load: commit.go, docs/durable.md). With it, a crash of
	// the database server (not of agenthost) may lose a model answer whose
	// calls were already decided and audited, and the turn asks the model
	// again: a decision may be made twice (the send ledger still keeps an
	// approved call from being sent twice).
	AsyncCommit bool
	// MaxRecoveryAttempts is how often an unfinished turn is taken up
	// again before the engine gives up on it (default 1,000: a turn that
	// waits for approval in human time is taken up at every restart).
	MaxRecoveryAttempts int
}

// Version is the default application version of durable turns. It changes
// when a turn's checkpoints change shape, so that a process never replays
// checkpoints written by an incompatible one.
const Version = "agenthost-turn-1"

// workflowName is the turn workflow's registered name.
const workflowName = "agenthost.turn"

// Engine is a host.Durability on DBOS Transact, with the durable session
// store in the same database. Open it, pass it as host.Options.Durability,
// and Close it after the host.
type Engine struct {
	dbos  dbos.Context
	store *Store
	pool  *pgxpool.Pool // PostgreSQL only
	// lazyPool (PostgreSQL, without AsyncCommit) commits without waiting
	// for the flush: the index of unfinished turns, a turn's appends
	// (commit.go).
	lazyPool *pgxpool.Pool
	timeout  time.Duration
	retries  int
	// executor and version are the engine's identity (leases).
	executor, version string

	mu      sync.Mutex
	run     host.DurableTurnFunc
	started bool
	closed  bool

	// running are the turns whose workflow runs in this process now (so
	// unfinished: PendingTurns need not ask the engine about them), by
	// session: a session's are found without a look at every other's.
	runMu   sync.Mutex
	running map[string]map[string]struct{} // session id -> turn ids
}

var _ host.Durability = (*Engine)(nil)

// Open opens the engine on the database dsn names: "sqlite:PATH" for one
// node (as approvals.store and audit.store name SQLite), or a postgres://
// URL (or key=value DSN). It creates the engine's tables and the store's when they are
// missing. Errors never repeat the DSN's password.
func Open(ctx context.Context, dsn string, opts Options) (*Engine, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	version := opts.AppVersion
	if version == "" {
		version = Version
	}
	cfg := dbos.Config{AppName: "agenthost", Logger: logger, ApplicationVersion: version, ExecutorID: opts.ExecutorID,
		SystemDBStartupTimeout: time.Minute}
	e := &Engine{running: map[string]map[string]struct{}{}, timeout: opts.ShutdownTimeout, retries: opts.MaxRecoveryAttempts, executor: opts.ExecutorID, version: version}
	if e.executor == "" {
		e.executor = "local"
	}
	if e.timeout <= 0 {
		e.timeout = 10 * time.Second
	}
	if e.retries <= 0 {
		e.retries = 1000
	}
	var db *sql.DB
	var d dialect
	if path, ok := sqlitePath(dsn); ok {
		if path == "" {
			return nil, errors.New("durable: the DSN names no file (want sqlite:PATH)")
		}
		var err error
		db, err = openSQLite(path)
		if err != nil {
			return nil, err
		}
		cfg.SQLiteSystemDB = db
		d = sqliteDialect
	} else if !pgstore.IsDSN(dsn) && !strings.Contains(dsn, "=") {
		return nil, errNotADSN
	} else {
		pcfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			// pgx's parse errors can quote the DSN, password included,
			// and a DSN that does not parse yields no password to mask:
			// say nothing of it (as approvals/pgstore does).
			return nil, errors.New("durable: the PostgreSQL DSN is not a valid postgres:// URL or key=value string")
		}
		if opts.AsyncCommit {
			pcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
		} else {
			pcfg.PrepareConn = prepareCommitMode // commit.go
		}
		if testPoolConfig != nil {
			testPoolConfig(pcfg)
		}
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return nil, fmt.Errorf("durable: open PostgreSQL: %w", redactDSNError(err, dsn))
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("durable: connect to PostgreSQL: %w", redactDSNError(err, dsn))
		}
		e.pool = pool
		cfg.SystemDBPool = pool
		db = stdlib.OpenDBFromPool(pool)
		d = postgresDialect
		if !opts.AsyncCommit {
			if e.lazyPool, err = openLazyPool(ctx, pcfg); err != nil { // commit.go
				e.closeDB(db)
				return nil, fmt.Errorf("durable: open PostgreSQL: %w", redactDSNError(err, dsn))
			}
		}
	}
	store, err := newStore(ctx, db, d)
	if err != nil {
		e.closeDB(db)
		return nil, err
	}
	if e.lazyPool != nil {
		store.lazy = stdlib.OpenDBFromPool(e.lazyPool)
	}
	store.asyncCommit = opts.AsyncCommit && d.name == "postgres"
	e.store = store
	dctx, err := dbos.NewContext(context.Background(), cfg)
	if err != nil {
		e.closeDB(db)
		return nil, fmt.Errorf("durable: start the engine: %w", redactDSNError(err, dsn))
	}
	e.dbos = dctx
	// The engine's own reading wins (DBOS__VMID overrides the option):
	// the lease must name the executor whose workflows DBOS records.
	if id := dctx.GetExecutorID(); id != "" {
		e.executor = id
	}
	return e, nil
}

func (e *Engine) closeDB(db *sql.DB) {
	_ = db.Close()
	if e.store != nil && e.store.lazy != nil {
		_ = e.store.lazy.Close()
	}
	for _, p := range []*pgxpool.Pool{e.pool, e.lazyPool} {
		if p != nil {
			p.Close()
		}
	}
}

// Store is the engine's session store (conversations, the send ledger).
func (e *Engine) Store() *Store { return e.store }

// History implements host.Durability: the store's conversations.
func (e *Engine) History() host.History { return e.store }

// Start implements host.Durability: it registers the turn workflow and
// launches the engine, which takes up the unfinished turns of this
// executor (they wait for their session to be resumed).
func (e *Engine) Start(run host.DurableTurnFunc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("durable: the engine is started already (one host per engine)")
	}
	if e.closed {
		return errors.New("durable: the engine is closed")
	}
	e.run = run
	dbos.RegisterWorkflow(e.dbos, e.turnWorkflow, dbos.WithWorkflowName(workflowName), dbos.WithMaxRecoveryAttempts(e.retries))
	if err := dbos.Launch(e.dbos); err != nil {
		return fmt.Errorf("durable: launch: %w", err)
	}
	e.started = true
	if err := e.indexPending(context.Background()); err != nil { // turns.go
		return err
	}
	return nil
}

// turnResult is what a finished turn workflow records.
type turnResult struct {
	Done bool `json:"done"`
}

// markRunning records that turn id of session runs in this process.
func (e *Engine) markRunning(session, id string) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	turns := e.running[session]
	if turns == nil {
		turns = map[string]struct{}{}
		e.running[session] = turns
	}
	turns[id] = struct{}{}
}

// markDone records that turn id of session no longer runs here.
func (e *Engine) markDone(session, id string) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	delete(e.running[session], id)
	if len(e.running[session]) == 0 {
		delete(e.running, session)
	}
}

func (e *Engine) turnWorkflow(ctx dbos.Context, rec host.TurnRecord) (turnResult, error) {
	id, err := ctx.GetWorkflowID()
	if err != nil {
		return turnResult{}, err
	}
	e.markRunning(rec.SessionID, id)
	defer e.markDone(rec.SessionID, id)
	run := &turnRun{id: id}
	if err := e.run(inTurn(ctx, run), &steps{wf: ctx, id: id, store: e.store}, rec); err != nil { // commit.go
		return turnResult{}, err
	}
	// Out of the index of unfinished turns, unless the append of the
	// turn's answer took it out (Store.append); a row left by an error
	// here is dropped when seen (turns.go).
	if !run.unlisted.Load() {
		_ = e.store.dropTurns(ctx, id)
	}
	return turnResult{Done: true}, nil
}

// RunTurn implements host.Durability.
func (e *Engine) RunTurn(ctx context.Context, id string, rec host.TurnRecord) error {
	if err := e.store.addTurn(ctx, id, rec.SessionID); err != nil {
		return fmt.Errorf("durable: start turn: %w", err)
	}
	h, err := dbos.RunWorkflow(e.dbos, e.turnWorkflow, rec, dbos.WithWorkflowID(id))
	if err != nil {
		return fmt.Errorf("durable: start turn: %w", err)
	}
	_, err = h.GetResult()
	return err
}

// AwaitTurn implements host.Durability.
func (e *Engine) AwaitTurn(ctx context.Context, id string) error {
	h, err := dbos.RetrieveWorkflow[turnResult](e.dbos, id)
	if err != nil {
		return fmt.Errorf("durable: turn %s: %w", id, err)
	}
	_, err = h.GetResult(dbos.WithHandlePollingInterval(100 * time.Millisecond))
	return err
}

// PendingTurns implements host.Durability: the session's candidates come
// from the adapter's index of unfinished turns, and the engine confirms
// them by id (turns.go).
func (e *Engine) PendingTurns(ctx context.Context, sessionID string) ([]string, error) {
	return e.pendingTurns(ctx, sessionID)
}

// sessionTurns keeps the ids of the session's turns among those listed by
// its prefix (another session's id may begin the same way; DeleteSession).
// The turn id says its session (host.TurnSession): the turns' inputs and
// outputs are not loaded.
func sessionTurns(list []dbos.WorkflowStatus, sessionID string) []string {
	var ids []string
	for _, w := range list {
		if s, ok := host.TurnSession(w.ID); ok && s == sessionID {
			ids = append(ids, w.ID)
		}
	}
	return ids
}

// Close stops the engine: running turns stop where they are and stay
// unfinished (they are taken up by the next process of this executor id),
// and an approval a turn waits for stays pending. Then it closes the
// database.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	err := dbos.Shutdown(e.dbos, e.timeout)
	e.closeDB(e.store.db)
	return err
}

// steps is a turn's host.Steps on DBOS: Step is RunAsStep, Go is DBOS's
// Go, Sent is the store's ledger.
type steps struct {
	wf    dbos.Context
	id    string
	store *Store
}

func (s *steps) TurnID() string { return s.id }

func (s *steps) Step(ctx context.Context, name string, fn host.StepFunc) (json.RawMessage, bool, error) {
	ran := false
	sctx, mode := stepContext(ctx, name) // commit.go
	out, err := dbos.RunAsStep(dbos.From(s.wf, sctx), func(ctx context.Context) (json.RawMessage, error) {
		ran = true
		return runStep(ctx, mode, fn)
	}, dbos.WithStepName(name))
	return out, ran, err
}

// runStep runs a step's work with flushed commits; the engine's record of
// its outcome follows in the step's own mode.
func runStep(ctx context.Context, mode *stepCommit, fn host.StepFunc) (json.RawMessage, error) {
	defer mode.recording.Store(true)
	return fn(flushedCommits(ctx))
}

func (s *steps) Go(ctx context.Context, name string, fn host.StepFunc) (<-chan host.StepOutcome, error) {
	sctx, mode := stepContext(ctx, name)
	ch, err := dbos.Go(dbos.From(s.wf, sctx), func(ctx context.Context) (json.RawMessage, error) {
		return runStep(ctx, mode, fn)
	}, dbos.WithStepName(name))
	if err != nil {
		return nil, err
	}
	out := make(chan host.StepOutcome, 1)
	go func() {
		r := <-ch
		out <- host.StepOutcome{Out: r.Result, Err: r.Err}
	}()
	return out, nil
}

func (s *steps) Sent(ctx context.Context, key string) (int, error) {
	return s.store.sent(ctx, key)
}

func (s *steps) SentTask(ctx context.Context, key, taskID string) error {
	return s.store.sentTask(ctx, key, taskID)
}

func (s *steps) TaskOf(ctx context.Context, key string) (string, error) {
	return s.store.taskOf(ctx, key)
}

var _ host.TaskSteps = (*steps)(nil)

// sqlitePath reports the file of a SQLite DSN: "sqlite:PATH", the grammar
// of the approvals and audit stores (approvals/sqlitestore.IsDSN), so one
// DSN names the same file for all of them.
func sqlitePath(dsn string) (string, bool) {
	if !sqlitestore.IsDSN(dsn) {
		return "", false
	}
	return strings.TrimPrefix(dsn, sqlitestore.Prefix), true
}

// errNotADSN: Open was given neither sqlite:PATH nor a PostgreSQL DSN.
var errNotADSN = errors.New("durable: not a database DSN: want sqlite:PATH or a postgres:// URL (or a key=value PostgreSQL DSN)")

// redactDSNError keeps a DSN's password out of an error's text.
func redactDSNError(err error, dsn string) error {
	pw := dsnPassword(dsn)
	if pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "xxxxx"))
}

func dsnPassword(dsn string) string {
	if cfg, err := pgxpool.ParseConfig(dsn); err == nil {
		return cfg.ConnConfig.Password
	}
	return ""
}

// DeleteSession removes a session: its conversation, its line, its turns'
// checkpoints and its calls' send ledger (ErrUnknownSession when the
// store holds none of it). An unfinished turn of the session is deleted
// too and never resumes.
func (e *Engine) DeleteSession(ctx context.Context, id string) error {
	list, err := dbos.ListWorkflows(e.dbos, dbos.WithFilterName(workflowName), dbos.WithFilterWorkflowIDPrefix(id+"."),
		dbos.WithFilterLoadInput(false), dbos.WithFilterLoadOutput(false))
	if err != nil {
		return fmt.Errorf("durable: list turns: %w", err)
	}
	ids := sessionTurns(list, id)
	if len(ids) > 0 {
		if err := dbos.CancelWorkflows(e.dbos, ids); err != nil {
			return fmt.Errorf("durable: cancel turns: %w", err)
		}
		if err := dbos.DeleteWorkflows(e.dbos, ids); err != nil {
			return fmt.Errorf("durable: delete turns: %w", err)
		}
		if err := e.store.forgetSends(ctx, ids); err != nil {
			return err
		}
	}
	if err := e.store.forgetSessionTurns(ctx, id); err != nil {
		return err
	}
	err = e.store.DeleteSession(ctx, id)
	if errors.Is(err, ErrUnknownSession) && len(ids) > 0 {
		return nil
	}
	return err
}

// DefaultPath is where the CLI keeps its sessions: sessions.db under
// $XDG_STATE_HOME/agenthost, else ~/.local/state/agenthost (beside the
// OAuth tokens).
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "agenthost", "sessions.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("durable: no state directory: %w", err)
		}
		home = h
	}
	return filepath.Join(home, ".local", "state", "agenthost", "sessions.db"), nil
}

// NewSessionID is a new random session id.
func NewSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
