// Package pgtest starts throwaway PostgreSQL clusters for tests: initdb
// and pg_ctl from the system's PostgreSQL (found on the PATH, then in
// Debian's /usr/lib/postgresql/VERSION/bin), a cluster in a temporary
// directory listening on a free loopback port, stopped and removed after.
// As root (initdb refuses to run as root) the cluster runs as the
// `postgres` user through runuser. Without PostgreSQL the tests fail with
// a message saying how to install it (`make sysdeps`); they never skip.
// It is a test kit: production code never imports it.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres: the PostgreSQL server binaries are not installed.
var ErrNoPostgres = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found on the PATH or in /usr/lib/postgresql/*/bin; " +
	"`make sysdeps` installs Debian's postgresql package")

// superuser is the cluster's superuser role.
const superuser = "agenthost"

// Cluster is one running throwaway PostgreSQL cluster.
type Cluster struct {
	// DSN connects to the cluster's postgres database as the superuser.
	DSN  string
	Port int
	dir  string
	bin  string
	run  []string // prefix running a command as the cluster's owner
	dbs  atomic.Int64
}

// Start starts a cluster for one test; t.Cleanup stops it.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartCluster()
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return c
}

// binDir finds the directory holding initdb and pg_ctl.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // newest version first (lexically; good enough for 1x versions)
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

// StartCluster starts a cluster (for a TestMain sharing one cluster between
// a package's tests); the caller must call Stop. It runs with fsync off:
// nothing in it must outlive the test.
func StartCluster() (*Cluster, error) { return StartClusterWith(Options{}) }

// Options configure StartClusterWith.
type Options struct {
	// Durable keeps fsync on, as in production (for benchmarks).
	Durable bool
}

// StartClusterWith is StartCluster with options.
func StartClusterWith(o Options) (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agenthost-pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, initdb needs the postgres user (from Debian's postgresql package): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		c.run = []string{"runuser", "-u", "postgres", "--"}
		if err := c.cmd("test", "-w", dir).Run(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("the postgres user cannot write to %s (a parent directory is closed to it): set TMPDIR to a directory every user can reach", dir)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.cmd("initdb", "-D", data, "-A", "trust", "-U", superuser, "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, bytes.TrimSpace(out))
	}
	var lastErr error
	for range 5 { // a free port can be taken between the probe and the start
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", port, dir)
		if !o.Durable {
			opts += " -c fsync=off"
		}
		out, err := c.cmd("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			c.Port = port
			c.DSN = fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, port)
			return c, nil
		}
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		lastErr = fmt.Errorf("pg_ctl start: %w: %s\n%s", err, bytes.TrimSpace(out), tail(log))
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// cmd runs name (a PostgreSQL binary, or test) as the cluster's owner.
func (c *Cluster) cmd(name string, args ...string) *exec.Cmd {
	if name != "test" {
		name = filepath.Join(c.bin, name)
	}
	argv := append(append(append([]string{}, c.run...), name), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the cluster (immediately: it is throwaway) and removes its
// directory.
func (c *Cluster) Stop() error {
	out, err := c.cmd("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop").CombinedOutput()
	rmErr := os.RemoveAll(c.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, bytes.TrimSpace(out))
	}
	return rmErr
}

// NewDatabase creates an empty database in the cluster for one test and
// returns its DSN.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		t.Fatalf("connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, c.Port, name)
}

// Rows returns every row of every table of the database at dsn as text,
// one line per row ("table: row"), for tests that look for a value no
// table may hold (a canary).
func Rows(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var schema, name string
		_ = rows.Scan(&schema, &name)
		tables = append(tables, pgx.Identifier{schema, name}.Sanitize())
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("only %d tables: %v", len(tables), tables)
	}
	var out bytes.Buffer
	for _, table := range tables {
		r, err := conn.Query(ctx, `SELECT t::text FROM `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var line string
			_ = r.Scan(&line)
			out.WriteString(table + ": " + line + "\n")
		}
		r.Close()
	}
	return out.String()
}
