package risk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// Annotations are a tool's annotations as a server declared them: the
// SEP-2793 fields (not yet normalised) and the older boolean hints.
type Annotations struct {
	Risk            RawMetadata
	Title           string
	ReadOnlyHint    *bool
	DestructiveHint *bool
	IdempotentHint  *bool
	OpenWorldHint   *bool
}

// errAnnotations marks annotations that are not a JSON object.
var errAnnotations = errors.New("annotations are not a JSON object")

// maxSideEffects bounds how many side-effect strings are kept per tool, and
// maxSideEffectLen their length, so a hostile server cannot bloat every
// audit record.
const (
	maxSideEffects   = 32
	maxSideEffectLen = 64
)

// ParseAnnotations reads the annotations object of a tool as the server sent
// it. mcp-go drops the SEP-2793 fields, so the host hands over the raw JSON.
//
// It never panics and never fails on a field: a field of the wrong type is
// kept in a form normalisation turns into the most restrictive value (an
// enum field holding 5 or null becomes an unknown enum string; a
// minTrustLevel of "3" or null stays as given and normalises to 5). Hints
// that are not booleans are ignored. Only annotations that are not a JSON
// object at all return an error (with empty Annotations); empty input and
// null mean "nothing declared".
func ParseAnnotations(raw json.RawMessage) (Annotations, error) {
	var a Annotations
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return a, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return Annotations{}, fmt.Errorf("%w: %v", errAnnotations, errors.Unwrap(err))
	}
	enum := func(key string) *string {
		v, ok := fields[key]
		if !ok {
			return nil
		}
		var s string
		if !isNull(v) && json.Unmarshal(v, &s) == nil {
			return &s
		}
		// Not a string: keep its JSON text, which is never a known value.
		t := string(bytes.TrimSpace(v))
		return &t
	}
	hint := func(key string) *bool {
		var b bool
		if v, ok := fields[key]; ok && !isNull(v) && json.Unmarshal(v, &b) == nil {
			return &b
		}
		return nil
	}
	a.Risk.RiskLevel = enum("riskLevel")
	a.Risk.Category = enum("category")
	a.Risk.BlastRadius = enum("blastRadius")
	a.Risk.Reversibility = enum("reversibility")
	a.Risk.ApprovalRecommendation = enum("approvalRecommendation")
	if v, ok := fields["minTrustLevel"]; ok {
		a.Risk.MinTrustLevel = json.RawMessage(bytes.TrimSpace(v))
	}
	if v, ok := fields["sideEffects"]; ok {
		a.Risk.SideEffects = parseSideEffects(v)
	}
	if v, ok := fields["title"]; ok {
		_ = json.Unmarshal(v, &a.Title) // a title of another type is just not shown
	}
	a.ReadOnlyHint = hint("readOnlyHint")
	a.DestructiveHint = hint("destructiveHint")
	a.IdempotentHint = hint("idempotentHint")
	a.OpenWorldHint = hint("openWorldHint")
	return a, nil
}

// parseSideEffects accepts an array of strings (other elements ignored) or a
// lone string. The result is non-nil when the key was present, so a trusted
// server can declare "no side effects" with [].
func parseSideEffects(v json.RawMessage) []string {
	if isNull(v) {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return []string{s}
		}
		return nil
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		var s string
		if !isNull(item) && json.Unmarshal(item, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// NormalizeSideEffects lower-cases, trims, strips control characters,
// de-duplicates and sorts side-effect strings, keeping at most 32 of at most
// 64 characters each. It never returns nil.
func NormalizeSideEffects(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := make([]string, 0, len(in))
	for _, s := range in {
		s = normSideEffect(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	norm.SortStrings(out)
	if len(out) > maxSideEffects {
		out = out[:maxSideEffects]
	}
	return out
}

// NormalizeTrust turns a declared minTrustLevel into 1..5. Anything that is
// not an integer in 1..5 becomes 5, the most restrictive level: 0, 6, 2.5,
// the string "3" and null all give 5. A number with an integral value (3.0)
// counts as that integer. ok reports whether v was valid as given.
func NormalizeTrust(v any) (level int, ok bool) {
	n, isInt := trustInt(v)
	if !isInt || n < MinTrust || n > MaxTrust {
		return MaxTrust, false
	}
	return int(n), true
}

func trustInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint:
		return clampUint(uint64(x))
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return clampUint(x)
	case float32:
		return floatInt(float64(x))
	case float64:
		return floatInt(x)
	case json.Number:
		return numberInt(string(x))
	case json.RawMessage:
		t := strings.TrimSpace(string(x))
		if t == "" || t[0] == '"' || t == "null" || t == "true" || t == "false" {
			return 0, false
		}
		return numberInt(t)
	}
	return 0, false
}

func clampUint(u uint64) (int64, bool) {
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

func floatInt(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return int64(f), true
}

func numberInt(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return floatInt(f)
}

// DeclaresIdempotent reports whether the annotations declare
// idempotentHint: true. It is the server's word: act on it only for a
// server whose annotations the operator trusts.
func DeclaresIdempotent(raw json.RawMessage) bool {
	a, err := ParseAnnotations(raw)
	return err == nil && a.IdempotentHint != nil && *a.IdempotentHint
}

// normSideEffect is one side effect as NormalizeSideEffects keeps it:
// control characters dropped, trimmed, lower case, at most
// maxSideEffectLen runes ("" is dropped).
func normSideEffect(s string) string {
	s = strings.ToLower(strings.TrimSpace(norm.StripControl(s)))
	if utf8.RuneCountInString(s) > maxSideEffectLen {
		s = string([]rune(s)[:maxSideEffectLen])
	}
	return s
}
