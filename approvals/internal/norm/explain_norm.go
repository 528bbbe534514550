package norm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// JSONOrString keeps valid JSON as-is and turns anything else into a JSON
// string, so an Explanation always marshals.
func JSONOrString(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(t) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(strings.ToValidUTF8(string(t), "\uFFFD"))
	return b
}
