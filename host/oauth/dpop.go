package oauth

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
	"slices"
	"strings"
	"sync"
	"time"
)

// DPoP (RFC 9449, SEP-1932): a sender-constrained token is bound to a key
// pair of the client's. Each request that uses the token, and each token
// request that obtains or renews it, carries a fresh proof: a JWT signed
// with the private key, naming the public key, the request's method and
// URL, a unique jti, and (on a resource request) the hash of the token
// (ath). A server may demand a nonce of its own in the proofs (use_dpop_nonce
// with a DPoP-Nonce header): the request is retried once with a new proof
// that carries it.

// DPoPMode says when a Client asks for DPoP-bound tokens.
type DPoPMode string

// The DPoP modes.
const (
	// DPoPAuto (the default) uses DPoP where the authorization server
	// advertises ES256 in dpop_signing_alg_values_supported, the protected
	// resource metadata sets dpop_bound_access_tokens_required, or the
	// server's challenge uses the DPoP scheme; else bearer tokens.
	DPoPAuto DPoPMode = "auto"
	// DPoPRequired always uses DPoP and refuses an authorization server
	// that does not advertise ES256, and a bearer token issued in answer
	// to a proof.
	DPoPRequired DPoPMode = "required"
	// DPoPOff never sends a proof.
	DPoPOff DPoPMode = "off"
)

// Token types of the token endpoint's answer and the Authorization scheme
// they are presented with.
const (
	tokenTypeBearer = "Bearer"
	tokenTypeDPoP   = "DPoP"
)

// dpopAlg is the one proof algorithm used: ES256 on P-256 (crypto/ecdsa).
const dpopAlg = "ES256"

// ErrDPoPUnsupported means dpop: required and the authorization server
// does not advertise ES256 DPoP proofs, or issued a bearer token instead.
var ErrDPoPUnsupported = errors.New("oauth: dpop is required but the authorization server does not support it")

// newDPoPKey makes the key pair of one grant of one subject.
func newDPoPKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("oauth: generating the DPoP key: %w", err)
	}
	return k, nil
}

// marshalDPoPKey encodes a DPoP key for the token store (PKCS#8, base64).
func marshalDPoPKey(k *ecdsa.PrivateKey) (string, error) {
	if k == nil {
		return "", nil
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", errors.New("oauth: encoding the DPoP key")
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// parseDPoPKey decodes marshalDPoPKey's form; errors never quote it.
func parseDPoPKey(s string) (*ecdsa.PrivateKey, error) {
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

// jwkThumbprint is the RFC 7638 SHA-256 thumbprint of the key's public JWK
// (what a DPoP-bound token names as cnf.jkt).
func jwkThumbprint(k *ecdsa.PublicKey) string {
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

// dpopProof builds a proof for a request of method to u: a fresh jti, iat
// now, ath when accessToken is set, nonce when set.
func dpopProof(k *ecdsa.PrivateKey, method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": dpopAlg, "jwk": publicJWK(&k.PublicKey)})
	claims := map[string]any{
		"jti": randomString(16),
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

// dpopNonces are the nonces servers asked for, by origin (the
// authorization server's and the resource's), bounded.
type dpopNonces struct {
	mu sync.Mutex
	m  map[string]string
}

// maxNonces bounds the origins whose nonces a Client remembers.
const maxNonces = 64

// maxNonceLen bounds a nonce taken from a server (RFC 9449 §8.1: a
// token68-like string).
const maxNonceLen = 512

func nonceOrigin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (n *dpopNonces) get(u *url.URL) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[nonceOrigin(u)]
}

// note remembers the DPoP-Nonce header of an answer from u, if any, and
// reports whether it changed the nonce.
func (n *dpopNonces) note(u *url.URL, h http.Header) bool {
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

// useDPoP decides whether a new grant asks for a DPoP-bound token, by the
// Client's mode and what the servers said. Under DPoPRequired a server
// that does not advertise ES256 is refused.
func (c *Client) useDPoP(d *discovery) (bool, error) {
	switch c.cfg.DPoP {
	case DPoPOff:
		return false, nil
	case DPoPRequired:
		if !slices.Contains(d.as.DPoPSigningAlgValuesSupported, dpopAlg) {
			return false, fmt.Errorf("%w (%s does not list %s in dpop_signing_alg_values_supported)", ErrDPoPUnsupported, d.issuer, dpopAlg)
		}
		return true, nil
	}
	if slices.Contains(d.as.DPoPSigningAlgValuesSupported, dpopAlg) {
		return true, nil
	}
	if d.prm != nil && d.prm.DPoPBoundAccessTokensRequired {
		return true, nil
	}
	c.mu.Lock()
	scheme := c.challenge.Scheme
	c.mu.Unlock()
	return strings.EqualFold(scheme, tokenTypeDPoP), nil
}

// grantKey is the DPoP key of a new grant: a fresh key pair when the grant
// uses DPoP, else nil.
func (c *Client) grantKey(d *discovery) (*ecdsa.PrivateKey, error) {
	use, err := c.useDPoP(d)
	if err != nil || !use {
		return nil, err
	}
	return newDPoPKey()
}

// isNonceChallenge reports whether a DPoP challenge (or a token endpoint
// error) asks for a new nonce.
func isNonceChallenge(ch Challenge) bool {
	return strings.EqualFold(ch.Scheme, tokenTypeDPoP) && ch.Param("error") == "use_dpop_nonce"
}
