package host

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
)

// A host opened with approvals.store and audit.store keeps approvals in
// the database, shares grants between hosts (replicas) of one session,
// writes audit records to the database (with audit.path empty, without the
// "not recorded" warning), and closes what it opened.
func TestHostOpensConfiguredStores(t *testing.T) {
	dir := t.TempDir()
	newHost := func() *Host {
		cfg := &config.Config{Approvals: readsAllowed(), Audit: config.Audit{Store: "sqlite:" + filepath.Join(dir, "audit.db")}}
		cfg.Approvals.Store = "sqlite:" + filepath.Join(dir, "approvals.db")
		cfg.ApplyDefaults()
		h, err := New(Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	a, b := newHost(), newHost()
	ctx := context.Background()
	if a.ApprovalStore() == nil || b.ApprovalStore() == nil {
		t.Fatal("no approval store opened")
	}
	g := approvals.Grant{Server: "orders", Tool: "update", DefHash: "h", Created: time.Now()}
	if err := a.grantStore().PutGrant(ctx, "sess-1", g); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.grantStore().GetGrant(ctx, "sess-1", "orders", "update"); !ok || err != nil {
		t.Errorf("a grant given on host A is not seen by host B: %v, %v", ok, err)
	}
	if _, unrecorded := a.audit.(*unrecordedSink); unrecorded {
		t.Error("audit.store set and audit.path empty: the host still warns that nothing is recorded")
	}
	if err := a.audit.Write(ctx, &approvals.Record{SessionID: "sess-1", CallID: "c1", TS: time.Now()}); err != nil {
		t.Fatalf("audit write: %v", err)
	}
	store := a.ApprovalStore()
	_ = a.Close()
	_ = b.Close()
	if _, err := store.List(ctx, approvals.ListOptions{}); !errors.Is(err, approvals.ErrStoreClosed) {
		t.Errorf("the host did not close the store it opened: %v", err)
	}
	cfg := &config.Config{File: "agenthost.yaml"}
	reports, err := VerifyAudit(ctx, &config.Config{Audit: config.Audit{Store: "sqlite:" + filepath.Join(dir, "audit.db")}})
	if err != nil || len(reports) != 1 || reports[0].Records != 1 || reports[0].Broken != nil {
		t.Errorf("VerifyAudit: %+v, %v", reports, err)
	}
	if _, err := OpenApprovalStore(ctx, cfg); KindOf(err) != KindConfig || !strings.Contains(err.Error(), "approvals.store is not set") {
		t.Errorf("OpenApprovalStore without approvals.store: %v", err)
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
