package jose

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// dpopAlg is the one proof algorithm used: ES256 on P-256 (crypto/ecdsa).
const dpopAlg = "ES256"

// NewDPoPKey makes the key pair of one grant of one subject.
func NewDPoPKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("oauth: generating the DPoP key: %w", err)
	}
	return k, nil
}

// MarshalDPoPKey encodes a DPoP key for the token store (PKCS#8, base64).
func MarshalDPoPKey(k *ecdsa.PrivateKey) (string, error) {
	if k == nil {
		return "", nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", errors.New("oauth: encoding the DPoP key")
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// ParseDPoPKey decodes MarshalDPoPKey's form; errors never quote it.
func ParseDPoPKey(s string) (*ecdsa.PrivateKey, error) {
	if s == "" {
		return nil, nil
	}
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("oauth: the stored DPoP key is not base64")
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, errors.New("oauth: the stored DPoP key is not a PKCS#8 key")
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("oauth: the stored DPoP key is not a P-256 key")
	}
	return ek, nil
}

// dpopJWK is the public JWK of a P-256 key (RFC 7517), members in the
// lexicographic order of its RFC 7638 thumbprint.
type dpopJWK struct {
	Crv string `json:"crv"`
	Kty string `json:"kty"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func publicJWK(k *ecdsa.PublicKey) dpopJWK {
	enc := base64.RawURLEncoding
	b, _ := k.Bytes() // 0x04 || x || y for a P-256 key
	return dpopJWK{Crv: "P-256", Kty: "EC", X: enc.EncodeToString(b[1:33]), Y: enc.EncodeToString(b[33:65])}
}

// Thumbprint is the RFC 7638 SHA-256 thumbprint of the key's public JWK
// (what a DPoP-bound token names as cnf.jkt).
func Thumbprint(k *ecdsa.PublicKey) string {
	data, _ := json.Marshal(publicJWK(k))
	sum := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// dpopHTU is a request URL as a proof names it: no query, no fragment
// (RFC 9449 §4.2).
func dpopHTU(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment, c.User = "", false, "", "", nil
	return c.String()
}

// DPoPProof builds a proof for a request of method to u: a fresh jti, iat
// now, ath when accessToken is set, nonce when set.
func DPoPProof(k *ecdsa.PrivateKey, method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": dpopAlg, "jwk": publicJWK(&k.PublicKey)})
	claims := map[string]any{
		"jti": RandomString(16),
		"htm": method,
		"htu": dpopHTU(u),
		"iat": now.Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	body, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sig, err := sign(k, dpopAlg, []byte(signing))
	if err != nil {
		return "", fmt.Errorf("oauth: signing the DPoP proof: %w", err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

// Nonces are the nonces servers asked for, by origin (the
// authorization server's and the resource's), bounded. The zero value is
// ready to use.
type Nonces struct {
	mu sync.Mutex
	m  map[string]string
}

// maxNonces bounds the origins whose nonces a Client remembers.
const maxNonces = 64

// maxNonceLen bounds a nonce taken from a server (RFC 9449 §8.1: a
// token68-like string).
const maxNonceLen = 512

func nonceOrigin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// Get is the nonce the origin of u asked for, or "".
func (n *Nonces) Get(u *url.URL) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[nonceOrigin(u)]
}

// Note remembers the DPoP-Nonce header of an answer from u, if any, and
// reports whether it changed the nonce.
func (n *Nonces) Note(u *url.URL, h http.Header) bool {
	v := strings.TrimSpace(h.Get("DPoP-Nonce"))
	if v == "" || len(v) > maxNonceLen || strings.ContainsFunc(v, func(r rune) bool { return r <= 0x20 || r >= 0x7f || r == '"' || r == '\\' }) {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	o := nonceOrigin(u)
	if n.m[o] == v {
		return false
	}
	if n.m == nil || len(n.m) >= maxNonces {
		n.m = map[string]string{}
	}
	n.m[o] = v
	return true
}

// RandomString is n random bytes in base64url: a jti, a PKCE verifier,
// an OAuth state.
func RandomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}
