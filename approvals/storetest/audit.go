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

	"github.com/agenthost/agenthost/approvals"
)

// AuditBackend is one empty database for the audit suite: Open opens a sink
// on it (the suite closes it), Verify checks its chains, and Exec runs a
// statement on it directly (the suite tampers with records to see Verify
// name them).
type AuditBackend struct {
	Open   func(t *testing.T) approvals.Sink
	Verify func(ctx context.Context) ([]approvals.ChainReport, error)
	Exec   func(ctx context.Context, sql string) error
}

// RunAudit runs the database audit sink suite: records written by
// concurrent writers through two sinks form one intact chain; a changed
// record, a removed record and a cut tail are each found and named.
func RunAudit(t *testing.T, newBackend func(t *testing.T) AuditBackend) {
	const perSink, writers = 60, 6
	setup := func(t *testing.T) AuditBackend {
		b := newBackend(t)
		sinks := []approvals.Sink{b.Open(t), b.Open(t)}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				sink := sinks[w%2]
				for i := range perSink / writers * 2 {
					r := &approvals.Record{TS: time.Now(), SessionID: fmt.Sprintf("s%d", w), CallID: fmt.Sprintf("call-%d-%d", w, i),
						Phase: approvals.PhaseDecision, Server: "orders", Tool: "get", Arguments: json.RawMessage(`{"id":1}`),
						Decision: approvals.ActionAllow, Outcome: approvals.OutcomeAutoAllowed, Result: approvals.ResultPending}
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
			if err := s.Write(context.Background(), &approvals.Record{}); !errors.Is(err, approvals.ErrSinkClosed) {
				t.Errorf("write after close: %v, want ErrSinkClosed", err)
			}
		}
		return b
	}
	verify := func(t *testing.T, b AuditBackend) approvals.ChainReport {
		t.Helper()
		reports, err := b.Verify(context.Background())
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if len(reports) != 1 || reports[0].Chain != approvals.DefaultChain {
			t.Fatalf("chains %+v, want one chain %q", reports, approvals.DefaultChain)
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
