package durable

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// SQLite parses every statement again on each call (database/sql prepares
// nothing unless asked, and the engine does not ask): a step's two
// transactions spend a fifth of their CPU in SQLite's parser. The
// engine's handle therefore keeps each connection's statements prepared,
// by their text: an ExecContext or QueryContext of a text seen before on
// that connection runs the statement prepared then. A statement whose rows
// are still open is not shared: a second query of the same text meanwhile
// prepares its own.

// maxCachedStmts bounds the statements a connection keeps (the engine and
// the store use a few dozen texts).
const maxCachedStmts = 128

// stmtConnector opens modernc's connections with a statement cache.
type stmtConnector struct {
	dsn string
	drv sqlite.Driver
}

func (c *stmtConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &stmtConn{Conn: conn, stmts: map[string]*cachedStmt{}}, nil
}

func (c *stmtConnector) Driver() driver.Driver { return &c.drv }

// openCachedSQLite is sql.Open("sqlite", dsn) with the statement cache.
func openCachedSQLite(dsn string) *sql.DB { return sql.OpenDB(&stmtConnector{dsn: dsn}) }

// modernConn is what modernc's connection offers beyond driver.Conn.
type modernConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type stmtConn struct {
	driver.Conn
	stmts map[string]*cachedStmt // used by one goroutine at a time (database/sql)
}

type cachedStmt struct {
	st    driver.Stmt
	inUse bool // its rows are open
}

func (c *stmtConn) modern() (modernConn, error) {
	m, ok := c.Conn.(modernConn)
	if !ok {
		return nil, errors.New("durable: the SQLite driver's connection lacks a context method")
	}
	return m, nil
}

// stmt is the prepared statement of query, or nil when it is in use.
func (c *stmtConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if cs, ok := c.stmts[query]; ok {
		if cs.inUse {
			return nil, nil
		}
		return cs, nil
	}
	m, err := c.modern()
	if err != nil {
		return nil, err
	}
	st, err := m.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{st: st}
	if len(c.stmts) < maxCachedStmts {
		c.stmts[query] = cs
	}
	return cs, nil
}

func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.stmt(ctx, query)
	if err != nil || cs == nil {
		m, merr := c.modern()
		if merr != nil {
			return nil, merr
		}
		return m.ExecContext(ctx, query, args)
	}
	if _, cached := c.stmts[query]; !cached {
		defer cs.st.Close()
	}
	return cs.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.stmt(ctx, query)
	if err != nil || cs == nil || c.stmts[query] != cs {
		if cs != nil {
			_ = cs.st.Close()
		}
		m, merr := c.modern()
		if merr != nil {
			return nil, merr
		}
		return m.QueryContext(ctx, query, args)
	}
	rows, err := cs.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.inUse = true
	return &cachedRows{Rows: rows, cs: cs}, nil
}

func (c *stmtConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	m, err := c.modern()
	if err != nil {
		return nil, err
	}
	return m.BeginTx(ctx, opts)
}

func (c *stmtConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	m, err := c.modern()
	if err != nil {
		return nil, err
	}
	return m.PrepareContext(ctx, query)
}

func (c *stmtConn) Ping(ctx context.Context) error {
	m, err := c.modern()
	if err != nil {
		return err
	}
	return m.Ping(ctx)
}

func (c *stmtConn) ResetSession(ctx context.Context) error {
	m, err := c.modern()
	if err != nil {
		return err
	}
	return m.ResetSession(ctx)
}

func (c *stmtConn) IsValid() bool {
	m, err := c.modern()
	return err == nil && m.IsValid()
}

func (c *stmtConn) Close() error {
	for _, cs := range c.stmts {
		_ = cs.st.Close()
	}
	c.stmts = nil
	return c.Conn.Close()
}

// cachedRows frees its statement for the next query when closed.
type cachedRows struct {
	driver.Rows
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.cs.inUse = false
	return err
}
