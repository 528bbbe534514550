package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DPoP (RFC 9449) on the test server: with Options.DPoP the authorization
// server advertises ES256 proofs, checks the proof of every token request
// that carries one and binds the token it issues to the proof's key
// (token_type DPoP); the protected resource then takes that token only
// with the DPoP scheme and a valid proof bound to it (ath, the key's
// thumbprint). Every proof's jti is accepted once, at either server: a
// replayed proof is refused (and counted as "dpop:replay"). With
// Options.DPoPNonce both servers demand a nonce of their own.

// The nonces the servers demand with Options.DPoPNonce.
const (
	ASNonce = "as-nonce-1"
	RSNonce = "rs-nonce-1"
)

// Proof is a DPoP proof the test server accepted.
type Proof struct {
	// Where is "token" or "resource".
	Where string
	// Header and Claims are the proof's decoded JOSE header and claims.
	Header map[string]any
	Claims map[string]any
	// JKT is the RFC 7638 thumbprint of the proof's key.
	JKT string
}

// Proofs returns the DPoP proofs accepted so far, in order.
func (s *Server) Proofs() []Proof {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Proof, len(s.proofs))
	copy(out, s.proofs)
	return out
}

// maxJTIs bounds the jtis the server remembers (a test sends few).
const maxJTIs = 1 << 16

// checkProof verifies the DPoP header of r against method and htu (and the
// access token's hash when accessToken is set) and records it; it returns
// the proof's key thumbprint and its nonce.
func (s *Server) checkProof(r *http.Request, where, htu, accessToken string) (jkt, nonce string, err error) {
	vals := r.Header.Values("DPoP")
	if len(vals) != 1 {
		return "", "", fmt.Errorf("want one DPoP header, got %d", len(vals))
	}
	p, err := parseProof(vals[0])
	if err != nil {
		return "", "", err
	}
	if p.Claims["htm"] != r.Method {
		return "", "", errors.New("htm does not match")
	}
	if p.Claims["htu"] != htu {
		return "", "", fmt.Errorf("htu %v is not %s", p.Claims["htu"], htu)
	}
	iat, _ := p.Claims["iat"].(float64)
	if d := time.Since(time.Unix(int64(iat), 0)); d > 5*time.Minute || d < -5*time.Minute {
		return "", "", errors.New("iat outside the window")
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if p.Claims["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return "", "", errors.New("ath does not match the access token")
		}
	} else if _, ok := p.Claims["ath"]; ok {
		return "", "", errors.New("ath in a token request")
	}
	jti, _ := p.Claims["jti"].(string)
	if jti == "" {
		return "", "", errors.New("no jti")
	}
	nonce, _ = p.Claims["nonce"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jtis[jti] {
		s.requests["dpop:replay"]++
		return "", "", errors.New("replayed proof (jti seen before)")
	}
	if len(s.jtis) >= maxJTIs {
		clear(s.jtis)
	}
	s.jtis[jti] = true
	p.Where = where
	s.proofs = append(s.proofs, p)
	return p.JKT, nonce, nil
}

// parseProof decodes a proof and checks its form and signature: typ
// dpop+jwt, ES256, a public P-256 jwk that verifies the signature.
func parseProof(proof string) (Proof, error) {
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return Proof{}, errors.New("not a compact JWT")
	}
	enc := base64.RawURLEncoding
	var p Proof
	for i, dst := range []*map[string]any{&p.Header, &p.Claims} {
		raw, err := enc.DecodeString(parts[i])
		if err != nil {
			return Proof{}, errors.New("bad base64url")
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return Proof{}, errors.New("bad JSON")
		}
	}
	if p.Header["typ"] != "dpop+jwt" || p.Header["alg"] != "ES256" {
		return Proof{}, errors.New("typ must be dpop+jwt and alg ES256")
	}
	jwk, _ := p.Header["jwk"].(map[string]any)
	if jwk == nil || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
		return Proof{}, errors.New("jwk must be a P-256 EC key")
	}
	if _, ok := jwk["d"]; ok {
		return Proof{}, errors.New("jwk carries the private key")
	}
	xs, _ := jwk["x"].(string)
	ys, _ := jwk["y"].(string)
	x, err1 := enc.DecodeString(xs)
	y, err2 := enc.DecodeString(ys)
	sig, err3 := enc.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || len(sig) != 64 {
		return Proof{}, errors.New("bad key or signature encoding")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return Proof{}, errors.New("jwk is not a P-256 point")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return Proof{}, errors.New("signature does not verify")
	}
	canon, _ := json.Marshal(map[string]string{"crv": "P-256", "kty": "EC", "x": xs, "y": ys})
	sum := sha256.Sum256(canon)
	p.JKT = enc.EncodeToString(sum[:])
	return p, nil
}

// htuOf is the URL a proof for r must name: scheme, host and path.
func htuOf(r *http.Request, base string) string {
	u, _ := url.Parse(base)
	return u.Scheme + "://" + u.Host + r.URL.Path
}
