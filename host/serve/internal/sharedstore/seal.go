package sharedstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseSealKey reads a sealing key: 64 hexadecimal digits or the
// standard base64 of 32 bytes (surrounding white space ignored).
func ParseSealKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if b, err := hex.DecodeString(text); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(text); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, errors.New("the session sealing key must be 32 bytes, written as 64 hexadecimal digits or in base64")
}

// Sealer seals session values for one session (AES-256-GCM; the session
// id is the additional data, so a record's values open for it alone).
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns the sealer of a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("serve: the session sealing key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal seals values for the session sessionID.
func (s *Sealer) Seal(sessionID string, values map[string]string) (string, error) {
	plain, err := json.Marshal(values)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return "v1:" + base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, []byte(sessionID))), nil
}

// ErrUnseal is Open's one error: sealed is not values sealed for this
// session with this key.
var ErrUnseal = errors.New("the session's sealed values do not open with this replica's key")

// Open opens values sealed for the session sessionID.
func (s *Sealer) Open(sessionID, sealed string) (map[string]string, error) {
	text, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return nil, ErrUnseal
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return nil, ErrUnseal
	}
	plain, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(sessionID))
	if err != nil {
		return nil, ErrUnseal
	}
	var values map[string]string
	if err := json.Unmarshal(plain, &values); err != nil {
		return nil, ErrUnseal
	}
	return values, nil
}
