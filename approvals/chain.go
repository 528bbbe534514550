package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
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
	Chain  string `json:"chain"`
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
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

// DefaultChain is the name of the audit chain database sinks append to.
const DefaultChain = "main"

// ChainReport is the result of checking one chain (`agenthost audit
// verify --json` prints a list of them).
type ChainReport struct {
	Chain   string `json:"chain"`
	Records int64  `json:"records"`
	// Broken names the first record where the chain does not hold; nil
	// when it is intact.
	Broken *BrokenChainError `json:"broken"`
}

// ChainSource reads a stored chain back for VerifyChains.
type ChainSource interface {
	// Chains lists the chain names (those with a head or any record).
	Chains(ctx context.Context) ([]string, error)
	// Head returns the chain's head (0, "" when it has none).
	Head(ctx context.Context, chain string) (seq int64, hash string, err error)
	// Links calls fn for each record of the chain in order, stopping when
	// fn returns an error (which it returns).
	Links(ctx context.Context, chain string, fn func(ChainLink) error) error
}

// VerifyChains checks every chain of src.
func VerifyChains(ctx context.Context, src ChainSource) ([]ChainReport, error) {
	chains, err := src.Chains(ctx)
	if err != nil {
		return nil, fmt.Errorf("list audit chains: %w", err)
	}
	out := make([]ChainReport, 0, len(chains))
	for _, c := range chains {
		v := &ChainVerifier{Chain: c}
		err := src.Links(ctx, c, v.Next)
		var broken *BrokenChainError
		if err == nil {
			seq, hash, herr := src.Head(ctx, c)
			if herr != nil {
				return out, fmt.Errorf("read the head of audit chain %q: %w", c, herr)
			}
			err = v.End(seq, hash)
		}
		if err != nil && !errors.As(err, &broken) {
			return out, fmt.Errorf("read audit chain %q: %w", c, err)
		}
		out = append(out, ChainReport{Chain: c, Records: v.Records(), Broken: broken})
	}
	return out, nil
}
