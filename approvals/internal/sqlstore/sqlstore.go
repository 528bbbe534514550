// Package sqlstore is the one place the SQL approvals stores
// (approvals/pgstore, approvals/sqlitestore) keep what does not depend on
// the driver: their statements, the decoding of stored rows into approvals
// types and the mapping of a missing row to approvals' sentinel errors, the
// read-modify-write transaction around approvals.CastVote, the waiters, the
// grants, the audit hash chain's append and verify walk, and schema
// migration. Each store adapts its driver's handle to DB and Tx and states
// in a Dialect what its database does differently.
//
// Statements are written once, with ? placeholders in the order of their
// arguments; a Dialect with Numbered placeholders gets $1, $2... instead.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/migrate"
)

// DB is a database handle as the shared code uses it.
type DB interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	// Scan runs a query and scans its first row into dest; a query that
	// returns no row is an error matching sql.ErrNoRows.
	Scan(ctx context.Context, dest []any, sql string, args ...any) error
	// Query runs a query; the caller closes its rows.
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// Begin starts a write transaction on one connection.
	Begin(ctx context.Context) (Tx, error)
}

// Rows are a query's result rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is a write transaction. A driver that pipelines sends BEGIN with a
// first Scan, and Commit's statements with COMMIT, each in one round trip.
type Tx interface {
	// Exec runs a statement.
	Exec(ctx context.Context, sql string, args ...any) error
	// Scan is DB.Scan inside the transaction.
	Scan(ctx context.Context, dest []any, sql string, args ...any) error
	// Commit runs stmts in order, then commits.
	Commit(ctx context.Context, stmts ...Stmt) error
	// Rollback ends the transaction unless it was committed, and frees its
	// connection; it is always called, once.
	Rollback(ctx context.Context)
}

// Stmt is one statement with its arguments.
type Stmt struct {
	SQL  string
	Args []any
}

// Dialect is what a database does differently from the statements here.
type Dialect struct {
	// Name names the database in messages: "PostgreSQL", "SQLite".
	Name string
	// Numbered: placeholders are $1, $2... rather than ?.
	Numbered bool
	// Time is the column value of a time (a timestamptz, or Unix
	// nanoseconds in an INTEGER column).
	Time func(time.Time) any
	// RowLocks: the database locks rows, not the whole database. A read
	// in a write transaction then ends in FOR UPDATE, and an audit chain's
	// head row is created when a sink opens so that every append has a
	// row to lock. Without it, a write transaction holds the database's
	// write lock from its start (SQLite's BEGIN IMMEDIATE).
	RowLocks bool
	// MigrationLock, when set, is run first in the migration transaction
	// to serialise replicas migrating at once (where beginning the
	// transaction does not already).
	MigrationLock string
	// Notify, when set, is run with a request's id in the transaction that
	// settles it, to wake the waiters of every handle (LISTEN/NOTIFY).
	// Without it a handle wakes its own waiters once the transaction
	// committed, and the waiters of other handles see the outcome when
	// they poll.
	Notify string
	// AppendAudit, when set, returns the statements that store a batch of
	// chained audit records; nil means one INSERT per record.
	AppendAudit func(chain string, links []Link) []Stmt
}

// nullTime is the column value of a time that may be unset (NULL).
func (d *Dialect) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return d.Time(t)
}

// locking is the read q, locking the rows it reads where rows are locked.
func (d *Dialect) locking(q string) string {
	if d.RowLocks {
		return q + " FOR UPDATE"
	}
	return q
}

// sql is the statement q with the dialect's placeholders.
func (d *Dialect) sql(q string) string {
	if !d.Numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for i := range len(q) {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// queries are the shared statements as a dialect writes them, rendered
// once for each store, sink or verification.
type queries struct {
	insertApproval, selectApproval, lockedRead, listOpen, listSettled, updateApproval string
	putGrant, selectGrant, deleteGrant                                                string
	selectHead, lockHead, createHead, putHead, insertAudit, listChains, selectLinks   string
}

func (d *Dialect) queries() *queries {
	return &queries{
		insertApproval: d.sql(insertApproval),
		selectApproval: d.sql(selectApproval),
		lockedRead:     d.sql(d.locking(selectApproval)),
		listOpen:       d.sql(listOpen),
		listSettled:    d.sql(listSettled),
		updateApproval: d.sql(updateApproval),
		putGrant:       d.sql(putGrant),
		selectGrant:    d.sql(selectGrant),
		deleteGrant:    d.sql(deleteGrant),
		selectHead:     d.sql(selectHead),
		lockHead:       d.sql(d.locking(selectHead)),
		createHead:     d.sql(createHead),
		putHead:        d.sql(putHead),
		insertAudit:    d.sql(insertAudit),
		listChains:     d.sql(listChains),
		selectLinks:    d.sql(selectLinks),
	}
}

// MigrationsDir is the folder of a store's embedded migrations.
const MigrationsDir = "migrations"

// Migrate applies the migrations in fsys (see MigrationsDir) that the
// database lacks, in one transaction, and refuses a database at a newer
// version (migrate.ErrSchemaTooNew).
func Migrate(ctx context.Context, db DB, d *Dialect, fsys fs.FS) error {
	ms, err := migrate.Load(fsys, MigrationsDir)
	if err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("lock the schema for migration: %w", err)
	}
	defer tx.Rollback(ctx)
	if d.MigrationLock != "" {
		if err := tx.Exec(ctx, d.MigrationLock); err != nil {
			return fmt.Errorf("lock the schema for migration: %w", err)
		}
	}
	if err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS agenthost_schema (version integer NOT NULL)"); err != nil {
		return fmt.Errorf("create the schema version table: %w", err)
	}
	version := 0
	switch err := tx.Scan(ctx, []any{&version}, "SELECT version FROM agenthost_schema"); {
	case errors.Is(err, sql.ErrNoRows):
		if err := tx.Exec(ctx, "INSERT INTO agenthost_schema (version) VALUES (0)"); err != nil {
			return fmt.Errorf("record the schema version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read the schema version: %w", err)
	}
	pending, err := migrate.Pending(ms, version)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if err := tx.Exec(ctx, d.sql("UPDATE agenthost_schema SET version = ?"), m.Version); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

// SQL adapts a database/sql handle. Its transactions are BEGIN as the
// driver does it (sqlitestore opens with _txlock=immediate). Commit runs a
// run of statements with one text (one audit record each) through one
// prepared statement.
func SQL(db *sql.DB) DB { return sqlDB{db} }

type sqlDB struct{ db *sql.DB }

func (d sqlDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDB) Scan(ctx context.Context, dest []any, q string, args ...any) error {
	return d.db.QueryRowContext(ctx, q, args...).Scan(dest...)
}

func (d sqlDB) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (d sqlDB) Begin(ctx context.Context) (Tx, error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return sqlTx{tx}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, q string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, q, args...)
	return err
}

func (t sqlTx) Scan(ctx context.Context, dest []any, q string, args ...any) error {
	return t.tx.QueryRowContext(ctx, q, args...).Scan(dest...)
}

func (t sqlTx) Commit(ctx context.Context, stmts ...Stmt) error {
	var prep *sql.Stmt // prepared for a run of statements with one text
	defer func() {
		if prep != nil {
			_ = prep.Close()
		}
	}()
	for i, st := range stmts {
		var err error
		switch {
		case prep != nil && i > 0 && stmts[i-1].SQL == st.SQL:
			_, err = prep.ExecContext(ctx, st.Args...)
		case i+1 < len(stmts) && stmts[i+1].SQL == st.SQL: // a run begins
			if prep != nil {
				_ = prep.Close()
			}
			if prep, err = t.tx.PrepareContext(ctx, st.SQL); err == nil {
				_, err = prep.ExecContext(ctx, st.Args...)
			}
		default:
			_, err = t.tx.ExecContext(ctx, st.SQL, st.Args...)
		}
		if err != nil {
			return err
		}
	}
	return t.tx.Commit()
}

func (t sqlTx) Rollback(context.Context) { _ = t.tx.Rollback() }
