package oauth

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
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
	return jose.NewDPoPKey()
}

// isNonceChallenge reports whether a DPoP challenge (or a token endpoint
// error) asks for a new nonce.
func isNonceChallenge(ch Challenge) bool {
	return strings.EqualFold(ch.Scheme, tokenTypeDPoP) && ch.Param("error") == "use_dpop_nonce"
}
