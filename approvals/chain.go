package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Audit records kept in a database form a tamper-evident chain: each
// record is stored with the hash of the previous record of its chain
// (PrevHash) and its own hash, ChainHash(PrevHash, record JSON). Changing,
// removing or reordering a record breaks the link of the record after it;
// the chain's head (last position and hash, kept beside it) catches
// records cut off the end. docs/audit.md describes it.

// ChainHash is the hash of a record in a chain: hex SHA-256 of the previous
// record's hash (empty for the first record), a newline, and the record's
// JSON.
func ChainHash(prevHash string, record []byte) string {
	h := sha256.New()
	h.Write([]byte(prevHash))
	h.Write([]byte{'\n'})
	h.Write(record)
	return hex.EncodeToString(h.Sum(nil))
}

// ChainLink is one stored record of a chain, as read back for checking.
type ChainLink struct {
	// Seq is the record's position in its chain, from 1.
	Seq      int64
	PrevHash string
	Hash     string
	Record   []byte
}

// BrokenChainError names the first record where a chain does not hold.
type BrokenChainError struct {
	Chain  string
	Seq    int64
	Reason string
}

func (e *BrokenChainError) Error() string {
	return fmt.Sprintf("audit chain %q is broken at record %d: %s", e.Chain, e.Seq, e.Reason)
}

// ChainVerifier checks a chain's records in order (Next), then its head
// (End). The first failure is returned as a *BrokenChainError.
type ChainVerifier struct {
	Chain string
	prev  string
	seq   int64
}

// Next checks the next record of the chain.
func (v *ChainVerifier) Next(l ChainLink) error {
	want := v.seq + 1
	switch {
	case l.Seq != want:
		return &BrokenChainError{Chain: v.Chain, Seq: want, Reason: fmt.Sprintf("record %d is missing (the next stored record is %d)", want, l.Seq)}
	case l.PrevHash != v.prev:
		return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "its previous-record hash does not match the record before it (a record before it was changed, removed or inserted)"}
	case ChainHash(l.PrevHash, l.Record) != l.Hash:
		return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "its content does not match its hash (the record was changed)"}
	}
	v.prev, v.seq = l.Hash, l.Seq
	return nil
}

// End checks that the chain ended where its head says it does.
func (v *ChainVerifier) End(headSeq int64, headHash string) error {
	switch {
	case headSeq > v.seq:
		return &BrokenChainError{Chain: v.Chain, Seq: v.seq + 1, Reason: fmt.Sprintf("records %d to %d are missing (cut off the end)", v.seq+1, headSeq)}
	case headSeq < v.seq || headHash != v.prev:
		return &BrokenChainError{Chain: v.Chain, Seq: headSeq, Reason: "the chain's head does not match its last record"}
	}
	return nil
}

// Records reports how many records were checked.
func (v *ChainVerifier) Records() int64 { return v.seq }
