package durable

import (
	"context"
	"path/filepath"
	"testing"
)

// The engine's SQLite handle prepares each statement text once per
// connection, and a query of a text whose rows are still open gets a
// statement of its own (sharing it would reset the open rows).
func TestSQLiteStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	db, err := openSQLite(filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{`CREATE TABLE t (n INTEGER)`, `INSERT INTO t (n) VALUES (1), (2), (3)`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const sum = `SELECT n FROM t WHERE n >= ? ORDER BY n`
	read := func(from int) (got []int) {
		rows, err := conn.QueryContext(ctx, sum, from)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		return got
	}
	if got := read(1); len(got) != 3 {
		t.Fatalf("first read: %v", got)
	}
	if got := read(2); len(got) != 2 {
		t.Fatalf("second read (the prepared statement again): %v", got)
	}
	// The same text while its rows are open.
	outer, err := conn.QueryContext(ctx, sum, 1)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	for outer.Next() {
		var n int
		if err := outer.Scan(&n); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, n)
		if inner := read(3); len(inner) != 1 || inner[0] != 3 {
			t.Fatalf("a nested read of the same text: %v", inner)
		}
	}
	_ = outer.Close()
	if len(seen) != 3 {
		t.Fatalf("the outer rows, with nested reads of the same text: %v", seen)
	}
	if err := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stmtConn)
		if !ok {
			t.Fatalf("the connection is a %T, not the statement cache's", dc)
		}
		if _, ok := sc.stmts[sum]; !ok || len(sc.stmts) != 3 {
			t.Errorf("prepared statements: %d, the query's cached %v; want 3 and true", len(sc.stmts), ok)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
