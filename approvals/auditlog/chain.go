package auditlog

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Audit records kept in a database form a tamper-evident chain: each
// record is stored with the hash of the previous record of its chain
// (PrevHash) and its own hash, ChainHash(PrevHash, record JSON). Changing,
// removing or reordering a record breaks the link of the record after it;
// the chain's head (last position and hash, kept beside it) catches
// records cut off the end. docs/audit.md describes it.
//
// A plain SHA-256 chain only shows changes made by someone who cannot
// recompute the hashes after the change, which anyone with write access
// can. A sink given a chain key (held outside the database) stores keyed
// links instead: ChainMAC, an HMAC-SHA256 marked by ChainKeyedPrefix, that
// nobody without the key can recompute. Unkeyed records written before a
// key was configured stay verifiable as unkeyed; an unkeyed record after a
// keyed one breaks the chain (it was rewritten without the key).

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

// ChainKeyedPrefix marks the hash of a keyed link (ChainMAC).
const ChainKeyedPrefix = "hmac-sha256:"

// MinChainKeyBytes is the shortest chain key accepted.
const MinChainKeyBytes = 16

// ErrChainKeyRequired: a chain holds keyed links, and no key was given to
// check them (or to append to it).
var ErrChainKeyRequired = errors.New("the audit chain is keyed: its key is needed (AGENTHOST_AUDIT_KEY or audit.chainKeyFile; docs/audit.md)")

// ChainMAC is the hash of a keyed link: ChainKeyedPrefix and the hex
// HMAC-SHA256, under key, of the previous record's hash, a newline, and
// the record's JSON.
func ChainMAC(key []byte, prevHash string, record []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prevHash))
	m.Write([]byte{'\n'})
	m.Write(record)
	return ChainKeyedPrefix + hex.EncodeToString(m.Sum(nil))
}

// ChainLinkHash is the hash a sink stores for a record: ChainMAC with a
// key, ChainHash without one.
func ChainLinkHash(key []byte, prevHash string, record []byte) string {
	if key != nil {
		return ChainMAC(key, prevHash, record)
	}
	return ChainHash(prevHash, record)
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
// (End). The first failure is returned as a *BrokenChainError; a keyed
// link without Key is ErrChainKeyRequired.
type ChainVerifier struct {
	Chain string
	// Key checks keyed links; nil checks unkeyed chains only.
	Key   []byte
	prev  string
	seq   int64
	keyed int64
}

// Next checks the next record of the chain.
func (v *ChainVerifier) Next(l ChainLink) error {
	want := v.seq + 1
	switch {
	case l.Seq != want:
		return &BrokenChainError{Chain: v.Chain, Seq: want, Reason: fmt.Sprintf("record %d is missing (the next stored record is %d)", want, l.Seq)}
	case l.PrevHash != v.prev:
		return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "its previous-record hash does not match the record before it (a record before it was changed, removed or inserted)"}
	}
	if strings.HasPrefix(l.Hash, ChainKeyedPrefix) {
		if v.Key == nil {
			return fmt.Errorf("audit chain %q, record %d: %w", v.Chain, l.Seq, ErrChainKeyRequired)
		}
		if !hmac.Equal([]byte(ChainMAC(v.Key, l.PrevHash, l.Record)), []byte(l.Hash)) {
			return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "its content does not match its keyed hash (the record was changed, or the key is not the one it was written with)"}
		}
		v.keyed++
	} else {
		switch {
		case v.keyed > 0:
			return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "an unkeyed record follows keyed ones (the chain was rewritten without the key)"}
		case ChainHash(l.PrevHash, l.Record) != l.Hash:
			return &BrokenChainError{Chain: v.Chain, Seq: l.Seq, Reason: "its content does not match its hash (the record was changed)"}
		}
	}
	v.prev, v.seq = l.Hash, l.Seq
	return nil
}

// Keyed reports how many of the records checked are keyed links.
func (v *ChainVerifier) Keyed() int64 { return v.keyed }

// End checks that the chain ended where its head says it does.
func (v *ChainVerifier) End(headSeq int64, headHash string) error {
	switch {
	case headSeq > v.seq:
		return &BrokenChainError{Chain: v.Chain, Seq: v.seq + 1, Reason: fmt.Sprintf("records %d to %d are missing (cut off the end)", v.seq+1, headSeq)}
	case headSeq < v.seq || headHash != v.prev:
		return &BrokenChainError{Chain: v.Chain, Seq: headSeq, Reason: "the chain's head does not match its last record"}
	case v.Key != nil && v.seq > 0 && v.keyed == 0:
		// Anyone can write a whole unkeyed chain; with a key configured,
		// the sink keys every record it appends.
		return &BrokenChainError{Chain: v.Chain, Seq: v.seq, Reason: "a key was given but no record is keyed: nothing was written since the key was configured, or the chain was rewritten without the key"}
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
	// Keyed counts the records checked against the chain key; the others
	// (Records - Keyed, written before a key was configured) are only
	// SHA-256 linked, which anyone with write access can recompute.
	Keyed int64 `json:"keyed"`
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

// VerifyChains checks every chain of src; key checks keyed links (nil:
// a chain with keyed links is ErrChainKeyRequired).
func VerifyChains(ctx context.Context, src ChainSource, key []byte) ([]ChainReport, error) {
	chains, err := src.Chains(ctx)
	if err != nil {
		return nil, fmt.Errorf("list audit chains: %w", err)
	}
	out := make([]ChainReport, 0, len(chains))
	for _, c := range chains {
		v := &ChainVerifier{Chain: c, Key: key}
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
		out = append(out, ChainReport{Chain: c, Records: v.Records(), Keyed: v.Keyed(), Broken: broken})
	}
	return out, nil
}
