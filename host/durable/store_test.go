package durable_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/historytest"
	"github.com/agenthost/agenthost/host/model"
)

func TestStoreConformance(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		historytest.RunSequenced(t, func(t *testing.T) host.SequencedHistory {
			e, err := durable.Open(context.Background(), b.dsn, durable.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return prefixed{e.Store(), t.Name()}
		})
	})
}

// prefixed gives each subtest its own session ids in the shared database.
type prefixed struct {
	*durable.Store
	prefix string
}

func (p prefixed) Load(ctx context.Context, id string) ([]model.Message, error) {
	return p.Store.Load(ctx, p.prefix+"/"+id)
}

func (p prefixed) Append(ctx context.Context, id string, msgs ...model.Message) error {
	return p.Store.Append(ctx, p.prefix+"/"+id, msgs...)
}

func (p prefixed) AppendAt(ctx context.Context, id string, at int, msgs ...model.Message) error {
	return p.Store.AppendAt(ctx, p.prefix+"/"+id, at, msgs...)
}

// An engine that cannot reach its database never repeats the DSN's
// password in its error (URL and key/value DSNs).
func TestOpenErrorHidesThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://agenthost:pw-canary-91@127.0.0.1:1/agenthost?connect_timeout=2",
		"host=127.0.0.1 port=1 user=agenthost password=pw-canary-91 dbname=agenthost connect_timeout=2",
		"postgres://agenthost:pw-canary-91@127.0.0.1:1/agenthost?sslmode=bogus",
		// Does not parse at all: no password can be taken out to mask.
		"postgres://agenthost:pw-canary-91@127.0.0.1:notaport/agenthost",
		"host=127.0.0.1 password='pw-canary-91",
	} {
		_, err := durable.Open(context.Background(), dsn, durable.Options{})
		if err == nil {
			t.Fatalf("%s: opened", dsn)
		}
		if strings.Contains(err.Error(), "pw-canary-91") {
			t.Fatalf("the error repeats the password: %v", err)
		}
	}
}

// The engine reads a SQLite DSN as the approvals and audit stores do
// (sqlite:PATH, the path as written): one DSN names one file for all of
// them, and what those stores refuse the engine refuses too.
func TestOpenSQLiteDSNGrammarIsTheStores(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		dsn    string
		opens  bool
		stores bool // approvals/stores opens it
	}{
		{dsn: "sqlite:" + filepath.Join(dir, "a.db"), opens: true, stores: true},
		{dsn: "sqlite:" + filepath.Join(dir, "b.sqlite3"), opens: true, stores: true},
		{dsn: filepath.Join(dir, "c.db")},
		{dsn: "sqlite:"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			ctx := context.Background()
			e, err := durable.Open(ctx, tc.dsn, durable.Options{})
			if (err == nil) != tc.opens {
				t.Fatalf("durable.Open: %v, want opened %v", err, tc.opens)
			}
			if err == nil {
				_ = e.Close()
			}
			s, serr := stores.Open(ctx, tc.dsn)
			if (serr == nil) != tc.stores {
				t.Fatalf("stores.Open: %v, want opened %v", serr, tc.stores)
			}
			if serr == nil {
				_ = s.Close()
			}
			if !tc.opens {
				if _, err := os.Stat(tc.dsn); err == nil {
					t.Fatalf("a refused DSN created %s", tc.dsn)
				}
				return
			}
			if _, err := os.Stat(strings.TrimPrefix(tc.dsn, "sqlite:")); err != nil {
				t.Fatalf("the engine did not open the file the stores open: %v", err)
			}
		})
	}
}

// A session's unfinished turns are its own: the turns of a session whose
// id begins with "ID." are listed by the same prefix, and are not taken
// for the session ID's.
func TestPendingTurnsAreTheSessionsOwn(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e, err := durable.Open(ctx, b.dsn, durable.Options{ShutdownTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		waiting := make(chan struct{}, 2)
		if err := e.Start(func(ctx context.Context, _ host.Steps, _ host.TurnRecord) error {
			waiting <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"p.q.0123456789abcdef.01234567", "p.0123456789abcdef.89abcdef"} {
			session, _ := host.TurnSession(id)
			go func() { _ = e.RunTurn(ctx, id, host.TurnRecord{SessionID: session}) }()
			<-waiting
		}
		for session, want := range map[string]string{"p": "p.0123456789abcdef.89abcdef", "p.q": "p.q.0123456789abcdef.01234567"} {
			ids, err := e.PendingTurns(ctx, session)
			if err != nil || len(ids) != 1 || ids[0] != want {
				t.Errorf("PendingTurns(%q) = %q, %v; want [%s]", session, ids, err, want)
			}
		}
	})
}

// A session's line is written with its first message, whichever way it is
// appended, and a described session keeps its line's facts.
func TestSessionLineComesWithTheFirstMessage(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		e, err := durable.Open(ctx, b.dsn, durable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		st := e.Store()
		msg := model.Message{Role: model.RoleUser, Content: "hello"}
		if err := st.AppendAt(ctx, t.Name()+"/at", 0, msg, msg); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, t.Name()+"/end", msg); err != nil {
			t.Fatal(err)
		}
		if err := st.Describe(ctx, durable.SessionInfo{ID: t.Name() + "/described", Subject: "alice", Title: "a title"}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendAt(ctx, t.Name()+"/described", 0, msg); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]durable.SessionInfo{
			"/at":        {Messages: 2},
			"/end":       {Messages: 1},
			"/described": {Messages: 1, Subject: "alice", Title: "a title"},
		} {
			got, err := st.Session(ctx, t.Name()+id)
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			if got.Messages != want.Messages || got.Subject != want.Subject || got.Title != want.Title {
				t.Errorf("%s: %+v, want %+v", id, got, want)
			}
		}
	})
}
