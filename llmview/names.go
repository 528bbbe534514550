// Package llmview turns the host's catalog into what the model sees: OpenAI
// tool definitions whose parameters are each tool's inputSchema (never the
// secureInputSchema), and an explicit map from exposed names back to
// (server, tool). Everything here is a pure function: no I/O.
package llmview

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Ref names a tool on a server.
type Ref struct {
	Server string
	Tool   string
}

// maxNameLen is the providers' limit for function names.
const maxNameLen = 64

// ExposedNames assigns every tool a name matching ^[a-zA-Z0-9_-]{1,64}$:
// "server__tool" when that is already valid and unique, otherwise the
// sanitised form with a short hash of the true (server, tool) appended. The
// result depends only on the set of refs, not on their order.
func ExposedNames(refs []Ref) map[Ref]string {
	sorted := slices.Clone(refs)
	slices.SortFunc(sorted, compareRefs)
	sorted = slices.Compact(sorted)

	base := make(map[Ref]string, len(sorted))
	count := map[string]int{}
	for _, r := range sorted {
		b := sanitize(r.Server) + "__" + sanitize(r.Tool)
		base[r] = b
		if b == r.Server+"__"+r.Tool {
			count[strings.ToLower(b)]++
		}
	}
	out := make(map[Ref]string, len(sorted))
	taken := map[string]bool{}
	for _, r := range sorted {
		b := base[r]
		clean := b == r.Server+"__"+r.Tool && len(b) <= maxNameLen && count[strings.ToLower(b)] == 1
		if clean {
			out[r] = b
			taken[strings.ToLower(b)] = true
		}
	}
	for _, r := range sorted {
		if _, ok := out[r]; ok {
			continue
		}
		sum := sha256.Sum256([]byte(r.Server + "\x00" + r.Tool))
		digest := hex.EncodeToString(sum[:])
		for n := 8; ; n += 4 {
			suffix := "_" + digest[:n]
			prefix := base[r]
			if len(prefix)+len(suffix) > maxNameLen {
				prefix = prefix[:maxNameLen-len(suffix)]
			}
			name := prefix + suffix
			if !taken[strings.ToLower(name)] || n >= len(digest) {
				out[r] = name
				taken[strings.ToLower(name)] = true
				break
			}
		}
	}
	return out
}

func compareRefs(a, b Ref) int {
	if c := strings.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return strings.Compare(a.Tool, b.Tool)
}

// sanitize keeps [a-zA-Z0-9_-] and replaces every other byte with '_'.
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
