package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/agenthost/agenthost/internal/pgtest"
)

// durableShop is a test server with one tool that asks one approver, and a
// config whose approvals and audit live in the database at dsn: two
// agenthost processes started with it are two replicas.
type durableShop struct {
	cfg    string
	record string
	env    []string
}

func newDurableShop(t *testing.T, approvalsDSN, auditDSN string, env ...string) durableShop {
	t.Helper()
	return newDurableShopTimeout(t, "10m", approvalsDSN, auditDSN, env...)
}

func newDurableShopTimeout(t *testing.T, timeout, approvalsDSN, auditDSN string, env ...string) durableShop {
	t.Helper()
	dir := t.TempDir()
	s := durableShop{record: filepath.Join(dir, "record.jsonl"), env: env}
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "delete_order", "inputSchema": obj{"type": "object", "properties": obj{"id": obj{"type": "string"}}},
			"annotations": rtRisk("delete", "high", "item", "manual", "single"), "x-test": obj{"text": "order deleted"}},
	})
	entry := stdioServer(tools, s.record)
	entry["trustAnnotations"] = true
	s.cfg = writeConfig(t, obj{
		"mcpServers": obj{"shop": entry},
		"approvals": obj{
			"store": approvalsDSN,
			"rules": []obj{{"id": "deletes", "when": obj{"category": []string{"delete"}}, "decide": "ask", "approvers": 1, "timeout": timeout}},
		},
		"audit": obj{"path": filepath.Join(dir, "audit.jsonl"), "store": auditDSN},
	})
	return s
}

// call starts `call shop delete_order --approve wait` in the background:
// one replica raising an ask and waiting for a vote.
func (s durableShop) call(t *testing.T, order string) *ftProc {
	t.Helper()
	return ftStart(t, s.env, "--config", s.cfg, "call", "shop", "delete_order", "--args", `{"id":"`+order+`"}`,
		"--approve", "wait", "--session-id", "sess-"+order, "--subject", "alice")
}

// cli runs one agenthost command against the shared store: the other
// replica, or an operator's shell.
func (s durableShop) cli(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, s.env, append([]string{"--config", s.cfg}, args...)...)
}

type listedApproval struct {
	ID        string            `json:"id"`
	State     string            `json:"state"`
	Server    string            `json:"server"`
	Tool      string            `json:"tool"`
	Session   string            `json:"session"`
	Subject   string            `json:"subject"`
	Approvers int               `json:"approvers"`
	Votes     []json.RawMessage `json:"votes"`
	ExpiresAt *time.Time        `json:"expiresAt"`
	Arguments json.RawMessage   `json:"arguments"`
}

// waitForRequest waits until the request of session sess is listed; the
// process p must still be waiting.
func (s durableShop) waitForRequest(t *testing.T, p *ftProc, sess string) listedApproval {
	t.Helper()
	return s.waitForRequestNot(t, p, sess, "")
}

// executed counts the delete_order calls the server ran.
func (s durableShop) executed(t *testing.T) int {
	t.Helper()
	return len(withMethod(readRecord(t, s.record), "tools/call"))
}

// TestDurableApprovalsTwoReplicas: a call raised on one agenthost process
// is approved or rejected from another (the approvals CLI), on PostgreSQL
// and on SQLite; a process killed while it waits leaves its request
// listed and resolvable, and that call never runs; the audit chain in the
// database checks out, and a changed record is named.
func TestDurableApprovalsTwoReplicas(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		cluster := pgtest.Start(t)
		dsn := cluster.NewDatabase(t)
		// The password comes from the environment, as in production (the
		// throwaway cluster trusts loopback connections, so any value works).
		withPassword := strings.Replace(dsn, "agenthost@", "agenthost:${DB_PASSWORD}@", 1)
		s := newDurableShop(t, withPassword, withPassword, "DB_PASSWORD=e2e-canary")
		durableScenario(t, s, func(q string) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		auditPath := filepath.Join(dir, "audit.db")
		s := newDurableShop(t, "sqlite:"+filepath.Join(dir, "approvals.db"), "sqlite:"+auditPath)
		durableScenario(t, s, func(q string) {
			db, err := sql.Open("sqlite", auditPath)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func durableScenario(t *testing.T, s durableShop, execAudit func(string)) {
	// Raised on replica A, approved from B: the call completes on A.
	a := s.call(t, "1")
	req := s.waitForRequest(t, a, "sess-1")
	if req.State != "pending" || req.Server != "shop" || req.Tool != "delete_order" || req.Subject != "alice" ||
		req.Approvers != 1 || len(req.Votes) != 0 || req.ExpiresAt == nil || !strings.Contains(string(req.Arguments), `"1"`) {
		t.Errorf("listed request %+v", req)
	}
	show := s.cli(t, "approvals", "show", req.ID)
	wantCode(t, show, 0)
	if !strings.Contains(show.stdout, "delete_order") || !strings.Contains(show.stdout, "pending") {
		t.Errorf("approvals show:\n%s", show)
	}
	self := s.cli(t, "approvals", "approve", req.ID, "--as", "Alice")
	wantCode(t, self, 12) // the requester cannot approve her own call
	vote := s.cli(t, "approvals", "approve", req.ID, "--as", "bob", "--reason", "checked the order")
	wantCode(t, vote, 0)
	if !strings.Contains(vote.stdout, "approved") {
		t.Errorf("approve:\n%s", vote)
	}
	done := a.wait(t, defaultRunTimeout)
	wantCode(t, done, 0)
	if !strings.Contains(done.stdout, "order deleted") || s.executed(t) != 1 {
		t.Fatalf("the approved call did not run once (executed %d):\n%s", s.executed(t), done)
	}
	wantCode(t, s.cli(t, "approvals", "approve", req.ID, "--as", "carol"), 12) // settled
	wantCode(t, s.cli(t, "approvals", "show", "apr_nope"), 11)

	// Rejected from B: the call on A is denied (exit 3) and does not run.
	a = s.call(t, "2")
	req = s.waitForRequest(t, a, "sess-2")
	wantCode(t, s.cli(t, "approvals", "reject", req.ID, "--as", "bob", "--reason", "not this one"), 0)
	if r := a.wait(t, defaultRunTimeout); r.code != 3 || s.executed(t) != 1 {
		t.Fatalf("rejected call: exit %d, executed %d\n%s", r.code, s.executed(t), r)
	}

	// Replica A dies while it waits: the request stays listed and can be
	// resolved; the call never runs. A restarted A raises its own request,
	// which completes.
	a = s.call(t, "3")
	orphan := s.waitForRequest(t, a, "sess-3")
	if err := killProcessGroup(a.cmd); err != nil {
		t.Fatal(err)
	}
	<-a.done
	listed := s.cli(t, "approvals", "list", "--json")
	wantCode(t, listed, 0)
	if !strings.Contains(listed.stdout, orphan.ID) {
		t.Fatalf("the request of the killed replica is gone:\n%s", listed)
	}
	restarted := s.call(t, "3")
	again := s.waitForRequestNot(t, restarted, "sess-3", orphan.ID)
	wantCode(t, s.cli(t, "approvals", "approve", orphan.ID, "--as", "bob"), 0)
	if got := s.cli(t, "approvals", "show", orphan.ID, "--json"); !strings.Contains(got.stdout, `"state": "approved"`) {
		t.Errorf("the orphaned request was not resolved:\n%s", got)
	}
	wantCode(t, s.cli(t, "approvals", "approve", again.ID, "--as", "bob"), 0)
	if r := restarted.wait(t, defaultRunTimeout); r.code != 0 || s.executed(t) != 2 {
		t.Fatalf("restarted call: exit %d, executed %d (the orphaned call must never run)\n%s", r.code, s.executed(t), r)
	}

	// The audit chain in the database checks out; a changed record is named.
	verify := s.cli(t, "audit", "verify")
	wantCode(t, verify, 0)
	if !strings.Contains(verify.stdout, "intact") {
		t.Errorf("audit verify:\n%s", verify)
	}
	execAudit(`UPDATE agenthost_audit SET record = replace(record, '"outcome":"rejected"', '"outcome":"approved"') WHERE record LIKE '%"outcome":"rejected"%'`)
	verify = s.cli(t, "audit", "verify", "--json")
	wantCode(t, verify, 13)
	var reports []struct {
		Chain  string `json:"chain"`
		Broken *struct {
			Seq    int64  `json:"seq"`
			Reason string `json:"reason"`
		} `json:"broken"`
	}
	if err := json.Unmarshal([]byte(verify.stdout), &reports); err != nil || len(reports) != 1 || reports[0].Broken == nil || reports[0].Broken.Seq < 1 {
		t.Fatalf("audit verify --json after tampering: %v\n%s", err, verify)
	}
	for _, r := range []result{verify, listed} {
		if strings.Contains(r.stdout+r.stderr, "e2e-canary") {
			t.Errorf("the database password was printed:\n%s", r)
		}
	}
}

// waitForRequestNot is waitForRequest for a session that already has the
// request skip.
func (s durableShop) waitForRequestNot(t *testing.T, p *ftProc, sess, skip string) listedApproval {
	t.Helper()
	deadline := time.Now().Add(defaultRunTimeout)
	for {
		r := s.cli(t, "approvals", "list", "--json")
		wantCode(t, r, 0)
		var list []listedApproval
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatalf("approvals list --json: %v\n%s", err, r)
		}
		if i := slices.IndexFunc(list, func(a listedApproval) bool { return a.Session == sess && a.ID != skip }); i >= 0 {
			return list[i]
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("no new request of session %s was listed; the waiting call:\n%s", sess, p.result())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDurableApprovalTimesOut: nobody votes before the rule's timeout: the
// call is denied (exit 3) and the request is stored as expired, which is
// not rejected; a late vote does not count (exit 12). A database migrated
// by a newer agenthost is refused (exit 2).
func TestDurableApprovalTimesOut(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "approvals.db")
	s := newDurableShopTimeout(t, "1s", "sqlite:"+dbPath, "sqlite:"+filepath.Join(dir, "audit.db"))
	a := s.call(t, "9")
	// The request is looked up after the call ended, among the settled
	// ones: on a loaded machine it can expire before a listing of the
	// open requests would have seen it.
	r := a.wait(t, defaultRunTimeout)
	wantCode(t, r, 3)
	all := s.cli(t, "approvals", "list", "--all", "--json")
	wantCode(t, all, 0)
	var listed []listedApproval
	if err := json.Unmarshal([]byte(all.stdout), &listed); err != nil {
		t.Fatalf("approvals list --all --json: %v\n%s", err, all)
	}
	i := slices.IndexFunc(listed, func(a listedApproval) bool { return a.Session == "sess-9" })
	if i < 0 {
		t.Fatalf("the expired request of sess-9 is not listed with --all\n%s", all)
	}
	req := listed[i]
	if s.executed(t) != 0 {
		t.Fatalf("the expired call ran\n%s", r)
	}
	show := s.cli(t, "approvals", "show", req.ID, "--json")
	wantCode(t, show, 0)
	var got listedApproval
	if err := json.Unmarshal([]byte(show.stdout), &got); err != nil || got.State != "expired" {
		t.Fatalf("state after the timeout: %q, %v\n%s", got.State, err, show)
	}
	wantCode(t, s.cli(t, "approvals", "approve", req.ID, "--as", "bob"), 12)

	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE agenthost_schema SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	refused := s.cli(t, "approvals", "list")
	wantCode(t, refused, 2)
	if !strings.Contains(refused.stderr, "approvals.store") || !strings.Contains(refused.stderr, "newer") {
		t.Errorf("refusal of a newer schema:\n%s", refused)
	}
}
