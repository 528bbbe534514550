package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(t *testing.T) approvals.Store {
		path := filepath.Join(t.TempDir(), "agenthost.db")
		return func(t *testing.T) approvals.Store {
			s, err := Open(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}

// A pending request survives closing and reopening the file (a restart).
func TestPendingSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agenthost.db")
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Raise(ctx, &approvals.Request{ID: "apr_restart", Requester: "alice", Server: "orders", Tool: "delete", Approvers: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list, err := s.List(ctx, approvals.ListOptions{})
	if err != nil || len(list) != 1 || list[0].ID != a.ID {
		t.Fatalf("after restart: %+v, %v", list, err)
	}
	if got, err := s.Vote(ctx, a.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil || got.State != approvals.StateApproved {
		t.Errorf("vote after restart: %q, %v", got.State, err)
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agenthost.db")
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE agenthost_schema SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("open against a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestAuditSink(t *testing.T) { storetest.RunAudit(t, auditBackend) }

func TestAuditSinkKeyed(t *testing.T) { storetest.RunAuditKeyed(t, auditBackend) }

func auditBackend(t *testing.T) storetest.AuditBackend {
	path := filepath.Join(t.TempDir(), "audit.db")
	return storetest.AuditBackend{
		OpenSink: func(ctx context.Context, key []byte) (auditlog.Sink, error) {
			return OpenAuditSink(ctx, path, AuditOptions{ChainKey: key})
		},
		VerifyKeyed: func(ctx context.Context, key []byte) ([]auditlog.ChainReport, error) {
			return VerifyAuditKeyed(ctx, path, key)
		},
		Exec: func(ctx context.Context, q string) error {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, q)
			return err
		},
		Records: func(ctx context.Context) ([]string, error) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				return nil, err
			}
			defer db.Close()
			rows, err := db.QueryContext(ctx, "SELECT record FROM agenthost_audit WHERE chain = 'main' ORDER BY seq")
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var out []string
			for rows.Next() {
				var r string
				if err := rows.Scan(&r); err != nil {
					return nil, err
				}
				out = append(out, r)
			}
			return out, rows.Err()
		},
	}
}
