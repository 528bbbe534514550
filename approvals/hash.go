package approvals

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
)

// canonicalHash returns "sha256:<hex>" of the canonical form of a JSON
// value: object keys sorted, insignificant whitespace removed, numbers as
// written. Equal JSON values hash equally whatever their key order. Input
// that is not valid JSON is hashed byte for byte.
func canonicalHash(raw json.RawMessage) string {
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

// DefinitionHash identifies a tool definition: a canonical hash over its
// name, description, input schema and annotations. Any change to one of
// them voids session grants for the tool. Hosts that keep the whole raw
// definition (secureInputSchema included) can hash it canonically instead.
func (t ToolInfo) DefinitionHash() string {
	def := struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations json.RawMessage `json:"annotations"`
	}{t.Name, t.Description, jsonOrString(t.InputSchema), jsonOrString(t.Annotations)}
	b, _ := json.Marshal(def) // every part is valid JSON by construction
	return canonicalHash(b)
}
