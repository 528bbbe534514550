// Package dbscan owns the canary scans of the tests: it renders every row
// of every table of a SQLite file (and its WAL) or a PostgreSQL database
// as text, with the base64 values in it decoded beside them (the durable
// engine keeps its checkpoints and turn inputs as base64 of their JSON,
// where a plain search would see nothing), so that a test can check that
// no secret reached any row.
package dbscan

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// SQLite renders every row of every table of the SQLite file at path,
// then the raw bytes of the file and of its WAL (pages not yet
// checkpointed into the file), each with its base64 values decoded.
func SQLite(ctx context.Context, path string) (string, error) {
	db, err := sql.Open("sqlite", "file:"+filepath.Clean(path)+"?mode=ro")
	if err != nil {
		return "", err
	}
	defer db.Close()
	tables, err := strings1(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return "", fmt.Errorf("dbscan: %s: %w", path, err)
	}
	var out strings.Builder
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			return "", fmt.Errorf("dbscan: %s: %w", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", fmt.Errorf("dbscan: %s: %w", table, err)
			}
			var line strings.Builder
			fmt.Fprintf(&line, "%s:", table)
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&line, " %v", v)
			}
			out.WriteString(WithDecoded(line.String()))
			out.WriteByte('\n')
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return "", fmt.Errorf("dbscan: %s: %w", table, err)
		}
	}
	for _, suffix := range []string{"", "-wal"} {
		raw, _ := os.ReadFile(path + suffix)
		out.WriteString(WithDecoded(string(raw)))
	}
	return out.String(), nil
}

func strings1(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Postgres renders every row of every base table of the database at dsn
// (every schema but the catalogs), with base64 values decoded; tables
// counts them.
func Postgres(ctx context.Context, dsn string) (text string, tables int, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	if err != nil {
		return "", 0, err
	}
	var names []string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			rows.Close()
			return "", 0, err
		}
		names = append(names, pgx.Identifier{schema, name}.Sanitize())
	}
	rows.Close()
	var out strings.Builder
	for _, table := range names {
		r, err := conn.Query(ctx, `SELECT t::text FROM `+table+` t`)
		if err != nil {
			return "", 0, fmt.Errorf("dbscan: %s: %w", table, err)
		}
		for r.Next() {
			var line string
			if err := r.Scan(&line); err != nil {
				r.Close()
				return "", 0, err
			}
			out.WriteString(WithDecoded(table + ": " + line))
			out.WriteByte('\n')
		}
		r.Close()
	}
	return out.String(), len(names), nil
}

// MustPostgres is Postgres for a test: a failure, or a database of fewer
// than five tables (the scan found none of the stores'), fails t.
func MustPostgres(t testing.TB, dsn string) string {
	t.Helper()
	text, tables, err := Postgres(context.Background(), dsn)
	if err != nil {
		t.Fatalf("dbscan: %v", err)
	}
	if tables < 5 {
		t.Fatalf("dbscan: only %d tables", tables)
	}
	return text
}

// base64Run is a run of base64 text long enough to hold a value.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)

// WithDecoded returns text followed by the decoding of each base64 run in
// it (at each of its four alignments, so a run that begins inside a
// longer token decodes too), decoded again while that yields more base64.
func WithDecoded(text string) string {
	var out strings.Builder
	out.WriteString(text)
	pending := []string{text}
	for depth := 0; depth < 3 && len(pending) > 0; depth++ {
		var next []string
		for _, t := range pending {
			for _, run := range base64Run.FindAllString(t, -1) {
				for shift := range 4 {
					if shift >= len(run) {
						break
					}
					s := strings.TrimRight(run[shift:], "=")
					if len(s)%4 == 1 {
						s = s[:len(s)-1] // no encoding ends so: a character too many
					}
					b, err := base64.RawStdEncoding.DecodeString(s)
					if err != nil || len(b) == 0 {
						continue
					}
					out.WriteString(" | ")
					out.Write(b)
					next = append(next, string(b))
				}
			}
		}
		pending = next
	}
	return out.String()
}
