package host

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/auditsink"
)

// A host given an approvals store and an audit database keeps approvals
// in the database, shares grants between hosts (replicas) of one session,
// writes audit records to the database (with audit.path empty, without the
// "not recorded" warning), and leaves them open: the host closes only what
// it opened (compose.New hands it what it opened as Options.Owned).
func TestHostUsesGivenStores(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := &config.Config{Approvals: readsAllowed(), Audit: config.Audit{Store: "sqlite:" + filepath.Join(dir, "audit.db")}}
	cfg.Approvals.Store = "sqlite:" + filepath.Join(dir, "approvals.db")
	cfg.ApplyDefaults()
	newHost := func() (*Host, approvals.Store) {
		store, err := stores.Databases{}.Open(ctx, cfg.Approvals.Store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = store.Close() })
		db, err := stores.Databases{}.OpenAuditSink(ctx, cfg.Audit.Store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		h, err := New(Options{Config: cfg, ApprovalStore: store, AuditDatabase: db})
		if err != nil {
			t.Fatal(err)
		}
		return h, store
	}
	a, store := newHost()
	b, _ := newHost()
	if a.ApprovalStore() != store || b.ApprovalStore() == nil {
		t.Fatal("the host does not keep approvals in the store it was given")
	}
	g := approvals.Grant{Server: "orders", Tool: "update", DefHash: "h", Created: time.Now()}
	if err := a.grantStore().PutGrant(ctx, "sess-1", g); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.grantStore().GetGrant(ctx, "sess-1", "orders", "update"); !ok || err != nil {
		t.Errorf("a grant given on host A is not seen by host B: %v, %v", ok, err)
	}
	if _, unrecorded := a.audit.(*auditsink.Unrecorded); unrecorded {
		t.Error("audit.store set and audit.path empty: the host still warns that nothing is recorded")
	}
	if err := a.audit.Write(ctx, &auditlog.Record{SessionID: "sess-1", CallID: "c1", TS: time.Now()}); err != nil {
		t.Fatalf("audit write: %v", err)
	}
	_ = a.Close()
	_ = b.Close()
	if _, err := store.List(ctx, approvals.ListOptions{}); err != nil {
		t.Errorf("the host closed a store it was given: %v", err)
	}
}

// Without approvals.store nothing is opened and sessions keep their own
// grants (the in-memory default's hot path is unchanged).
func TestHostWithoutStore(t *testing.T) {
	cfg := &config.Config{Approvals: readsAllowed()}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.ApprovalStore() != nil || h.grantStore() != nil {
		t.Error("a store was opened without approvals.store")
	}
}

// A host given no store, for a config that names one, is a configuration
// error that says what to pass, never a silent in-memory fallback.
func TestHostWithoutStoresRefusesStores(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, key string
		set       func(*config.Config)
	}{
		{"approvals", "approvals.store", func(c *config.Config) { c.Approvals.Store = "sqlite:" + filepath.Join(dir, "a.db") }},
		{"audit", "audit.store", func(c *config.Config) { c.Audit.Store = "sqlite:" + filepath.Join(dir, "b.db") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Approvals: readsAllowed()}
			tc.set(cfg)
			cfg.ApplyDefaults()
			h, err := New(Options{Config: cfg})
			if err == nil {
				h.Close()
				t.Fatal("a host given no store accepted a config naming one")
			}
			if KindOf(err) != KindConfig || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), "compose.Options.Databases") {
				t.Errorf("error %v: want a config error naming %s and compose.Options.Databases", err, tc.key)
			}
		})
	}
}

// TestHostLinksNoDatabaseDriver: a program that wires a host by hand links
// no database driver (pgx, the SQLite engine), no model client
// (go-openai), no OpenTelemetry and no OAuth client: package compose
// builds those.
func TestHostLinksNoDatabaseDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/jackc/") || strings.HasPrefix(pkg, "modernc.org/") ||
			strings.HasSuffix(pkg, "/approvals/stores") || strings.HasSuffix(pkg, "/approvals/pgstore") || strings.HasSuffix(pkg, "/approvals/sqlitestore") ||
			strings.Contains(pkg, "openai") || strings.HasPrefix(pkg, "go.opentelemetry.io/") || strings.HasSuffix(pkg, "/host/oauth") ||
			strings.HasSuffix(pkg, "/host/compose") || strings.HasSuffix(pkg, "/host/otelobs") || strings.HasSuffix(pkg, "/plugins") {
			t.Errorf("package host links %s", pkg)
		}
	}
}

// With audit.path and audit.store empty the host warns once that nothing
// is recorded: at WarnUnrecorded (a CLI calls it before it draws), and not
// again at the first decision; a host that records warns at neither.
func TestWarnUnrecordedOnce(t *testing.T) {
	const warning = "audit.path is empty"
	for _, tc := range []struct {
		name  string
		audit config.Audit
		want  int
	}{
		{"nothing recorded", config.Audit{}, 1},
		{"audit.path", config.Audit{Path: filepath.Join(t.TempDir(), "audit.jsonl")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			cfg := &config.Config{Approvals: readsAllowed(), Audit: tc.audit}
			cfg.ApplyDefaults()
			h, err := New(Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(&logs, nil)), AuditAlso: auditlog.Discard{}})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			h.WarnUnrecorded()
			if got := strings.Count(logs.String(), warning); got != tc.want {
				t.Fatalf("after WarnUnrecorded: %d warnings, want %d\n%s", got, tc.want, logs.String())
			}
			for i := range 2 {
				if err := h.audit.Write(context.Background(), &auditlog.Record{SessionID: "s", CallID: fmt.Sprint("c", i), TS: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}
			h.WarnUnrecorded()
			if got := strings.Count(logs.String(), warning); got != tc.want {
				t.Errorf("after two decisions: %d warnings, want %d\n%s", got, tc.want, logs.String())
			}
		})
	}
}
