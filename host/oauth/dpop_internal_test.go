package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
)

// TestTokenDPoPThumbprint: a DPoP-bound token names its key by the RFC
// 7638 thumbprint of the public key (the cnf.jkt it is bound to); a bearer
// token has none.
func TestTokenDPoPThumbprint(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bound := &Token{AccessToken: "a", DPoPKey: key}
	if got, want := bound.DPoPThumbprint(), jose.Thumbprint(&key.PublicKey); got != want || len(got) != 43 {
		t.Errorf("DPoPThumbprint = %q, want %q (43 base64url characters)", got, want)
	}
	if got := (&Token{AccessToken: "a"}).DPoPThumbprint(); got != "" {
		t.Errorf("a bearer token's thumbprint = %q, want none", got)
	}
}
