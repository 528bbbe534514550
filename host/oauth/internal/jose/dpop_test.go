package jose

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// decodeProof splits a proof and checks its signature with the key it
// names.
func decodeProof(t *testing.T, proof string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q is not a compact JWS", proof)
	}
	enc := base64.RawURLEncoding
	for i, dst := range []*map[string]any{&header, &claims} {
		raw, err := enc.DecodeString(parts[i])
		if err != nil || json.Unmarshal(raw, dst) != nil {
			t.Fatalf("proof part %d does not decode", i)
		}
	}
	jwk := header["jwk"].(map[string]any)
	x, _ := enc.DecodeString(jwk["x"].(string))
	y, _ := enc.DecodeString(jwk["y"].(string))
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatalf("jwk: %v", err)
	}
	sig, _ := enc.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the proof's signature does not verify with its jwk")
	}
	return header, claims
}

func TestDPoPProofContents(t *testing.T) {
	key, err := NewDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	ath := sha256.Sum256([]byte("the-access-token"))
	tests := []struct {
		name, method, url, token, nonce string
		want                            map[string]any // claims; a nil value: absent
	}{
		{"token request", "POST", "https://as.example/token", "", "",
			map[string]any{"htm": "POST", "htu": "https://as.example/token", "ath": nil, "nonce": nil}},
		{"resource request with token and nonce", "GET", "https://rs.example/mcp", "the-access-token", "n-1",
			map[string]any{"htm": "GET", "htu": "https://rs.example/mcp", "ath": base64.RawURLEncoding.EncodeToString(ath[:]), "nonce": "n-1"}},
		{"query, fragment and user info are not part of htu", "POST", "https://u:p@rs.example:8443/mcp?session=1#frag", "", "",
			map[string]any{"htu": "https://rs.example:8443/mcp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(tt.url)
			proof, err := DPoPProof(key, tt.method, u, tt.token, tt.nonce, now)
			if err != nil {
				t.Fatal(err)
			}
			header, claims := decodeProof(t, proof)
			if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
				t.Errorf("header %v", header)
			}
			jwk := header["jwk"].(map[string]any)
			if len(jwk) != 4 || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
				t.Errorf("jwk %v: want the public P-256 key only (no d)", jwk)
			}
			if jwk["x"] != publicJWK(&key.PublicKey).X {
				t.Errorf("jwk is not the key's")
			}
			if claims["iat"] != float64(now.Unix()) {
				t.Errorf("iat %v", claims["iat"])
			}
			if jti, _ := claims["jti"].(string); len(jti) < 16 {
				t.Errorf("jti %q", jti)
			}
			for k, v := range tt.want {
				if got, ok := claims[k]; (v == nil && ok) || (v != nil && got != v) {
					t.Errorf("claim %s = %v, want %v", k, got, v)
				}
			}
		})
	}
}

// Every proof is new: a jti is never used twice, for the same request or
// another (RFC 9449 §4.2, §11.1).
func TestDPoPProofsAreNeverReplayed(t *testing.T) {
	key, _ := NewDPoPKey()
	u, _ := url.Parse("https://rs.example/mcp")
	seen := map[string]bool{}
	for range 1000 {
		proof, err := DPoPProof(key, "POST", u, "tok", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		_, claims := decodeProof(t, proof)
		jti := claims["jti"].(string)
		if seen[jti] {
			t.Fatalf("jti %s repeated", jti)
		}
		seen[jti] = true
	}
}

// The thumbprint of RFC 9449's example key is the cnf.jkt of its example
// token (RFC 9449 §4.1, §6.1).
func TestJWKThumbprintVector(t *testing.T) {
	enc := base64.RawURLEncoding
	x, _ := enc.DecodeString("l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs")
	y, _ := enc.DecodeString("9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA")
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Thumbprint(pub), "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"; got != want {
		t.Errorf("thumbprint %s, want %s", got, want)
	}
}

func TestDPoPKeyEncoding(t *testing.T) {
	key, _ := NewDPoPKey()
	s, err := MarshalDPoPKey(key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseDPoPKey(s)
	if err != nil || !back.Equal(key) {
		t.Fatalf("round trip: %v", err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := MarshalDPoPKey(p384)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"!!!!", base64.StdEncoding.EncodeToString([]byte("not a key")), other} {
		if _, err := ParseDPoPKey(bad); err == nil || strings.Contains(err.Error(), bad) {
			t.Errorf("ParseDPoPKey(%.10q…) = %v: want an error that does not quote it", bad, err)
		}
	}
}

func TestDPoPNoncesBounded(t *testing.T) {
	var n Nonces
	h := http.Header{"Dpop-Nonce": {"abc"}}
	for i := range 3 * maxNonces {
		u, _ := url.Parse("https://h" + strings.Repeat("x", i) + ".example/")
		n.Note(u, h)
		if len(n.m) > maxNonces {
			t.Fatalf("%d nonces kept", len(n.m))
		}
	}
	u, _ := url.Parse("https://a.example/")
	for _, bad := range []string{"has space", `quo"te`, strings.Repeat("n", maxNonceLen+1)} {
		if n.Note(u, http.Header{"Dpop-Nonce": {bad}}) {
			t.Errorf("nonce %.20q was taken", bad)
		}
	}
	if !n.Note(u, h) || n.Note(u, h) || n.Get(u) != "abc" {
		t.Error("a new nonce is not noted once and then kept")
	}
}
