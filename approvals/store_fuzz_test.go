package approvals

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzApprovalJSON: a stored approval read back from a database never
// panics, and what decodes re-encodes to a fixed point.
func FuzzApprovalJSON(f *testing.F) {
	a := NewApproval(&Request{ID: "apr_1", SessionID: "s", Requester: "alice", Server: "orders", Tool: "delete",
		Arguments: json.RawMessage(`{"id":7}`), Rules: []string{"deletes"}, Approvers: 2, Deadline: time.Unix(1700000000, 5)}, time.Unix(1700000000, 0))
	_ = CastVote(&a, Resolution{ApproverID: "bob", Allow: true, Note: "ok"}, time.Unix(1700000001, 0))
	seed, _ := json.Marshal(a)
	f.Add(seed)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"x","arguments":"not json","votes":[{"id":"b","decision":"allow","ts":"2026-01-01T00:00:00Z"}],"expiresAt":null}`))
	f.Add([]byte(`{"risk":{"category":"destroy","minTrustLevel":9},"approvers":-3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Approval
		if json.Unmarshal(b, &got) != nil {
			return
		}
		once, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("decoded approval does not encode: %v", err)
		}
		var again Approval
		if err := json.Unmarshal(once, &again); err != nil {
			t.Fatalf("encoded approval does not decode: %v\n%s", err, once)
		}
		twice, err := json.Marshal(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("not a fixed point:\n%s\n%s", once, twice)
		}
		// Voting on whatever was stored never panics.
		_ = CastVote(&again, Resolution{ApproverID: "carol", Allow: true}, time.Unix(1700000002, 0))
	})
}
