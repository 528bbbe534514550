package norm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
)

// CanonicalHash returns "sha256:<hex>" of the canonical form of a JSON
// value: object keys sorted, insignificant whitespace removed, numbers as
// written. Equal JSON values hash equally whatever their key order. Input
// that is not valid JSON is hashed byte for byte.
func CanonicalHash(raw json.RawMessage) string {
	sum := sha256.Sum256(canonicalJSON(raw))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func canonicalJSON(raw json.RawMessage) []byte {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.Decode(new(any)) != io.EOF {
		return append([]byte("invalid:"), t...)
	}
	out, err := json.Marshal(v) // map keys come out sorted
	if err != nil {
		return append([]byte("invalid:"), t...)
	}
	return out
}
