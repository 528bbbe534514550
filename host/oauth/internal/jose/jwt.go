// Package jose signs what the OAuth client sends as JWTs: client
// assertions of private_key_jwt (RFC 7523) with the client's key, and DPoP
// proofs (RFC 9449) with the P-256 key a token is bound to; it makes,
// encodes and thumbprints those keys (RFC 7638) and keeps the nonces
// servers ask the proofs to carry. Errors never quote a key.
package jose

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// ClientAssertionType is the client_assertion_type of private_key_jwt.
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// ParsePrivateKey reads a PEM private key (PKCS#8, SEC 1 EC or PKCS#1
// RSA) for private_key_jwt client authentication. Errors never quote the
// key.
func ParsePrivateKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("oauth: the private key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, errors.New("oauth: the private key's type cannot sign")
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("oauth: the private key is neither PKCS#8, SEC 1 EC nor PKCS#1 RSA")
}

// SigningAlg is the JWS algorithm for a key: ES256/ES384 for EC P-256/P-384,
// RS256 for RSA, EdDSA for Ed25519.
func SigningAlg(key crypto.Signer) (string, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		}
		return "", errors.New("oauth: only P-256 and P-384 EC keys are supported")
	case *rsa.PrivateKey:
		return "RS256", nil
	case ed25519.PrivateKey:
		return "EdDSA", nil
	}
	return "", fmt.Errorf("oauth: unsupported private key type %T", key)
}

// ClientAssertion builds the signed JWT of private_key_jwt (RFC 7523):
// iss and sub the client id, aud the issuer, valid for five minutes.
func ClientAssertion(key crypto.Signer, clientID, audience string, now time.Time) (string, error) {
	alg, err := SigningAlg(key)
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("oauth: random: %w", err)
	}
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sig, err := sign(key, alg, []byte(signing))
	if err != nil {
		return "", err
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

func sign(key crypto.Signer, alg string, data []byte) ([]byte, error) {
	switch alg {
	case "EdDSA":
		return key.Sign(rand.Reader, data, crypto.Hash(0))
	case "RS256":
		h := sha256.Sum256(data)
		return key.Sign(rand.Reader, h[:], crypto.SHA256)
	case "ES256", "ES384":
		k := key.(*ecdsa.PrivateKey)
		var digest []byte
		size := 32
		if alg == "ES256" {
			h := sha256.Sum256(data)
			digest = h[:]
		} else {
			h := sha512.Sum384(data)
			digest = h[:]
			size = 48
		}
		r, s, err := ecdsa.Sign(rand.Reader, k, digest)
		if err != nil {
			return nil, fmt.Errorf("oauth: signing the client assertion: %w", err)
		}
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out, nil
	}
	return nil, fmt.Errorf("oauth: unsupported signing algorithm %s", alg)
}
