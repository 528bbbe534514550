package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
)

// AuditBackend is one empty database for the audit suite: Open opens a sink
// on it (the suite closes it), Verify checks its chains, and Exec runs a
// statement on it directly (the suite tampers with records to see Verify
// name them).
type AuditBackend struct {
	// OpenSink opens a sink keyed with key (nil: unkeyed).
	OpenSink func(ctx context.Context, key []byte) (auditlog.Sink, error)
	// VerifyKeyed checks the chains, keyed links with key.
	VerifyKeyed func(ctx context.Context, key []byte) ([]auditlog.ChainReport, error)
	Exec        func(ctx context.Context, sql string) error
	// Records returns the main chain's record texts in order (the keyed
	// suite recomputes hashes as an attacker with write access would).
	Records func(ctx context.Context) ([]string, error)
}

// Open opens an unkeyed sink.
func (b AuditBackend) Open(t *testing.T) auditlog.Sink { return b.OpenKeyed(t, nil) }

// OpenKeyed opens a sink keyed with key.
func (b AuditBackend) OpenKeyed(t *testing.T, key []byte) auditlog.Sink {
	t.Helper()
	s, err := b.OpenSink(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Verify checks the chains without a key.
func (b AuditBackend) Verify(ctx context.Context) ([]auditlog.ChainReport, error) {
	return b.VerifyKeyed(ctx, nil)
}

// RunAudit runs the database audit sink suite: records written by
// concurrent writers through two sinks form one intact chain; a changed
// record, a removed record and a cut tail are each found and named.
func RunAudit(t *testing.T, newBackend func(t *testing.T) AuditBackend) {
	const perSink, writers = 60, 6
	setup := func(t *testing.T) AuditBackend {
		b := newBackend(t)
		sinks := []auditlog.Sink{b.Open(t), b.Open(t)}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				sink := sinks[w%2]
				for i := range perSink / writers * 2 {
					r := &auditlog.Record{TS: time.Now(), SessionID: fmt.Sprintf("s%d", w), CallID: fmt.Sprintf("call-%d-%d", w, i),
						Phase: auditlog.PhaseDecision, Server: "orders", Tool: "get", Arguments: json.RawMessage(`{"id":1}`),
						Decision: rules.ActionAllow, Outcome: rules.OutcomeAutoAllowed, Result: auditlog.ResultPending}
					if err := sink.Write(context.Background(), r); err != nil {
						t.Errorf("write: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, s := range sinks {
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if err := s.Write(context.Background(), &auditlog.Record{}); !errors.Is(err, auditlog.ErrSinkClosed) {
				t.Errorf("write after close: %v, want ErrSinkClosed", err)
			}
		}
		return b
	}
	verify := func(t *testing.T, b AuditBackend) auditlog.ChainReport {
		t.Helper()
		reports, err := b.Verify(context.Background())
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if len(reports) != 1 || reports[0].Chain != auditlog.DefaultChain {
			t.Fatalf("chains %+v, want one chain %q", reports, auditlog.DefaultChain)
		}
		return reports[0]
	}
	const total = perSink * 2
	t.Run("Intact", func(t *testing.T) {
		b := setup(t)
		if r := verify(t, b); r.Broken != nil || r.Records != total {
			t.Errorf("report %+v, want %d intact records", r, total)
		}
	})
	tampers := []struct {
		name, sql string
		seq       int64
		reason    string
	}{
		{"ChangedRecord", "UPDATE agenthost_audit SET record = replace(record, '\"outcome\":\"auto_allowed\"', '\"outcome\":\"approved\"') WHERE seq = 7", 7, "content"},
		{"RemovedRecord", "DELETE FROM agenthost_audit WHERE seq = 30", 30, "missing"},
		{"CutTail", fmt.Sprintf("DELETE FROM agenthost_audit WHERE seq > %d", total-3), total - 2, "cut off"},
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			if err := b.Exec(context.Background(), tc.sql); err != nil {
				t.Fatal(err)
			}
			r := verify(t, b)
			if r.Broken == nil || r.Broken.Seq != tc.seq || !strings.Contains(r.Broken.Reason, tc.reason) {
				t.Errorf("report %+v (broken %+v), want broken at %d (%s)", r, r.Broken, tc.seq, tc.reason)
			}
		})
	}
}

// RunAuditKeyed runs the keyed chain suite: an attacker with write access
// who changes a record (auto_allowed -> approved) and recomputes the later
// hashes and the head, as SHA-256 or under a made-up key mark, is found;
// so is a chain rewritten whole without the key; records written before
// the key stay verifiable as unkeyed, and a sink without the key cannot
// append to a keyed chain.
func RunAuditKeyed(t *testing.T, newBackend func(t *testing.T) AuditBackend) {
	key := []byte("0123456789abcdef0123456789abcdef")
	write := func(t *testing.T, s auditlog.Sink, n int, from int) {
		t.Helper()
		for i := range n {
			r := &auditlog.Record{TS: time.Now(), SessionID: "s", CallID: fmt.Sprintf("call-%d", from+i),
				Phase: auditlog.PhaseDecision, Server: "orders", Tool: "get", Arguments: json.RawMessage(`{"id":1}`),
				Decision: rules.ActionAllow, Outcome: rules.OutcomeAutoAllowed, Result: auditlog.ResultPending}
			if err := s.Write(context.Background(), r); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// rehash recomputes every hash from record from on, with hash, and
	// sets the head: what verify sees after a careful rewrite.
	rehash := func(t *testing.T, b AuditBackend, from int, hash func(prev string, rec []byte) string) {
		t.Helper()
		ctx := context.Background()
		recs, err := b.Records(ctx)
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		for i, rec := range recs {
			seq := i + 1
			if seq < from {
				prev = auditlog.ChainLinkHash(key, prev, []byte(rec))
				continue
			}
			h := hash(prev, []byte(rec))
			if err := b.Exec(ctx, fmt.Sprintf("UPDATE agenthost_audit SET prev_hash = '%s', hash = '%s' WHERE chain = 'main' AND seq = %d", prev, h, seq)); err != nil {
				t.Fatal(err)
			}
			prev = h
		}
		if err := b.Exec(ctx, fmt.Sprintf("UPDATE agenthost_audit_heads SET hash = '%s' WHERE chain = 'main'", prev)); err != nil {
			t.Fatal(err)
		}
	}
	verifyOne := func(t *testing.T, b AuditBackend, k []byte) auditlog.ChainReport {
		t.Helper()
		reports, err := b.VerifyKeyed(context.Background(), k)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if len(reports) != 1 {
			t.Fatalf("reports %+v, want one chain", reports)
		}
		return reports[0]
	}
	const approve = "UPDATE agenthost_audit SET record = replace(record, '\"outcome\":\"auto_allowed\"', '\"outcome\":\"approved\"') WHERE seq = 7"
	fakeMark := func(prev string, rec []byte) string {
		return auditlog.ChainKeyedPrefix + auditlog.ChainHash(prev, rec)
	}
	tampers := []struct {
		name   string
		from   int
		hash   func(prev string, rec []byte) string
		seq    int64
		reason string
	}{
		{"ChangedAndRecomputedPlain", 7, auditlog.ChainHash, 7, "unkeyed record follows keyed"},
		{"ChangedAndRecomputedUnderAFakeMark", 7, fakeMark, 7, "keyed hash"},
		{"RewrittenWholeWithoutTheKey", 1, auditlog.ChainHash, 20, "no record is keyed"},
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t)
			write(t, b.OpenKeyed(t, key), 20, 0)
			if r := verifyOne(t, b, key); r.Broken != nil || r.Records != 20 || r.Keyed != 20 {
				t.Fatalf("before tampering: %+v (%+v), want 20 intact keyed records", r, r.Broken)
			}
			if err := b.Exec(context.Background(), approve); err != nil {
				t.Fatal(err)
			}
			rehash(t, b, tc.from, tc.hash)
			r := verifyOne(t, b, key)
			if r.Broken == nil || r.Broken.Seq != tc.seq || !strings.Contains(r.Broken.Reason, tc.reason) {
				t.Errorf("report %+v (broken %+v), want broken at %d (%s)", r, r.Broken, tc.seq, tc.reason)
			}
		})
	}
	t.Run("UnkeyedThenKeyed", func(t *testing.T) {
		b := newBackend(t)
		write(t, b.Open(t), 5, 0)
		write(t, b.OpenKeyed(t, key), 5, 5)
		if r := verifyOne(t, b, key); r.Broken != nil || r.Records != 10 || r.Keyed != 5 {
			t.Errorf("report %+v (%+v), want 10 intact records, 5 keyed", r, r.Broken)
		}
		if r := verifyOne(t, b, []byte("another key, not the one used")); r.Broken == nil || r.Broken.Seq != 6 {
			t.Errorf("with another key: %+v (%+v), want broken at 6", r, r.Broken)
		}
		if _, err := b.Verify(context.Background()); !errors.Is(err, auditlog.ErrChainKeyRequired) {
			t.Errorf("verify without the key: %v, want ErrChainKeyRequired", err)
		}
		s := b.Open(t)
		defer s.Close()
		err := s.Write(context.Background(), &auditlog.Record{TS: time.Now(), Phase: auditlog.PhaseDecision})
		if !errors.Is(err, auditlog.ErrChainKeyRequired) {
			t.Errorf("an unkeyed sink appended to a keyed chain: %v, want ErrChainKeyRequired", err)
		}
	})
}
