package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/storetest"
)

// The waiters' poll is set to an hour, so a waiter that wakes does so
// through LISTEN/NOTIFY.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(t *testing.T) approvals.Store {
		dsn := cluster.NewDatabase(t)
		return func(t *testing.T) approvals.Store {
			s, err := Open(context.Background(), dsn, Options{PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

func TestRefusesNewerSchema(t *testing.T) {
	dsn := cluster.NewDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	// Opening again is a no-op migration.
	s, err = Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	_ = s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE agenthost_schema SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("open against a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestBadDSNDoesNotQuoteIt(t *testing.T) {
	_, err := Open(context.Background(), "postgres://u:s3cret-canary@[::1/db", Options{})
	if err == nil || strings.Contains(err.Error(), "s3cret-canary") {
		t.Errorf("bad DSN: %v", err)
	}
}

func TestAuditSink(t *testing.T) { storetest.RunAudit(t, auditBackend) }

func TestAuditSinkKeyed(t *testing.T) { storetest.RunAuditKeyed(t, auditBackend) }

func auditBackend(t *testing.T) storetest.AuditBackend {
	dsn := cluster.NewDatabase(t)
	return storetest.AuditBackend{
		OpenSink: func(ctx context.Context, key []byte) (auditlog.Sink, error) {
			return OpenAuditSink(ctx, dsn, AuditOptions{ChainKey: key})
		},
		VerifyKeyed: func(ctx context.Context, key []byte) ([]auditlog.ChainReport, error) {
			return VerifyAuditKeyed(ctx, dsn, key)
		},
		Exec: func(ctx context.Context, sql string) error {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, sql)
			return err
		},
		Records: func(ctx context.Context) ([]string, error) {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return nil, err
			}
			defer conn.Close(ctx)
			rows, err := conn.Query(ctx, "SELECT record FROM agenthost_audit WHERE chain = 'main' ORDER BY seq")
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[string])
		},
	}
}
