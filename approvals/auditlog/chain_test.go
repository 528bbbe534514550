package auditlog

import (
	"errors"
	"strings"
	"testing"
)

func chainOf(records ...string) []ChainLink {
	var out []ChainLink
	prev := ""
	for i, r := range records {
		h := ChainHash(prev, []byte(r))
		out = append(out, ChainLink{Seq: int64(i + 1), PrevHash: prev, Hash: h, Record: []byte(r)})
		prev = h
	}
	return out
}

func TestChainVerifier(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func([]ChainLink) ([]ChainLink, int64, string)
		wantSeq int64 // 0: intact
		reason  string
	}{
		{"intact", func(c []ChainLink) ([]ChainLink, int64, string) { return c, 4, c[3].Hash }, 0, ""},
		{"record changed", func(c []ChainLink) ([]ChainLink, int64, string) {
			c[1].Record = []byte(`{"outcome":"approved"}`)
			return c, 4, c[3].Hash
		}, 2, "content"},
		{"record removed", func(c []ChainLink) ([]ChainLink, int64, string) {
			return append(c[:1:1], c[2:]...), 4, c[3].Hash
		}, 2, "missing"},
		{"record removed and renumbered", func(c []ChainLink) ([]ChainLink, int64, string) {
			out := append(c[:1:1], c[2:]...)
			for i := range out {
				out[i].Seq = int64(i + 1)
			}
			return out, 3, out[2].Hash
		}, 2, "previous-record hash"},
		{"tail cut", func(c []ChainLink) ([]ChainLink, int64, string) { return c[:2], 4, c[3].Hash }, 3, "cut off"},
		{"head rewritten to a cut tail", func(c []ChainLink) ([]ChainLink, int64, string) { return c[:2], 2, c[3].Hash }, 2, "head"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			links, headSeq, headHash := tc.tamper(chainOf(`{"a":1}`, `{"a":2}`, `{"a":3}`, `{"a":4}`))
			v := &ChainVerifier{Chain: "main"}
			var err error
			for _, l := range links {
				if err = v.Next(l); err != nil {
					break
				}
			}
			if err == nil {
				err = v.End(headSeq, headHash)
			}
			var broken *BrokenChainError
			switch {
			case tc.wantSeq == 0 && err != nil:
				t.Fatalf("intact chain: %v", err)
			case tc.wantSeq == 0:
				return
			case !errors.As(err, &broken):
				t.Fatalf("err = %v, want a BrokenChainError", err)
			case broken.Seq != tc.wantSeq || !strings.Contains(broken.Reason, tc.reason):
				t.Errorf("broken at %d (%s), want %d (%s)", broken.Seq, broken.Reason, tc.wantSeq, tc.reason)
			}
		})
	}
}
