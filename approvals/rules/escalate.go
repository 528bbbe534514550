package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Limits on how much of the arguments the escalators walk; beyond them the
// call is treated like unreadable arguments (risk raised), never ignored.
const (
	maxEscalateDepth = 32
	maxEscalateNodes = 10000
)

// escalate raises eff from the actual arguments of a call; it never lowers
// anything:
//
//   - a truthy force, recursive, cascade or all_namespaces (any spelling,
//     at any depth) raises riskLevel one grade, once;
//   - all_namespaces truthy, or a namespace parameter set to "*", widens
//     blastRadius to at least cluster; a cluster parameter set to "*" to at
//     least organization; an organization or tenant "*" to global;
//   - arguments that are not a JSON object (or too deep or large to walk)
//     raise riskLevel one grade, the same single step.
//
// Truthy is true, a non-zero number, a non-empty array or object, or a
// string other than "", "false", "0", "no", "off". It returns the raised
// metadata and one line per change (none when nothing changed). checked
// is the call's check of args (Call.ArgsCheck): arguments it vouches for
// are not validated again.
//
// eff is returned as it came when nothing is raised, sharing its lists:
// an escalator changes only riskLevel and blastRadius, on eff's copy, so
// no list is ever copied here (Decide hands over a risk Normalize just
// made, which nothing else holds).
func escalate(eff risk.Effective, args json.RawMessage, checked ArgsCheck) (risk.Effective, []string) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) > 0 && trimmed[0] == '{' && len(trimmed) < 8<<10 && (checked.Valid(args) || json.Valid(trimmed)) && !mayEscalate(trimmed) {
		// The common case: a small object with no escalating key.
		return eff, nil
	}
	return escalateWalk(eff, args)
}

// escalateWalk is Escalate without the pre-filter.
func escalateWalk(eff risk.Effective, args json.RawMessage) (risk.Effective, []string) {
	var notes []string
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return eff, nil
	}
	bumpRisk := func(why string) {
		before := eff.RiskLevel
		eff.RiskLevel = norm.RaiseBy(risk.RiskOrder, eff.RiskLevel, 1)
		if eff.RiskLevel != before {
			notes = append(notes, fmt.Sprintf("%s: riskLevel %s -> %s", why, before, eff.RiskLevel))
		}
	}
	widen := func(to risk.BlastRadius, why string) {
		if to.Rank() > eff.BlastRadius.Rank() {
			notes = append(notes, fmt.Sprintf("%s: blastRadius %s -> %s", why, eff.BlastRadius, to))
			eff.BlastRadius = to
		}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var root any
	err := dec.Decode(&root)
	obj, isObj := root.(map[string]any)
	if err != nil || !isObj || dec.Decode(new(any)) != io.EOF {
		bumpRisk("arguments are not a JSON object")
		return eff, notes
	}
	w := walker{}
	w.walk(obj, 0)
	switch {
	case w.overflow:
		bumpRisk("arguments too deep or too large to check")
	case w.flag != "":
		bumpRisk(fmt.Sprintf("argument %q is set", w.flag))
	}
	for _, s := range w.scopes {
		widen(s.to, s.why)
	}
	return eff, notes
}

// mayEscalate is the fast path's test, for a JSON object json.Valid
// accepted and shorter than 8 KiB (so within maxEscalateNodes): false means
// escalateWalk would change nothing, because no key at any depth, decoded
// as encoding/json decodes it, is one the walk acts on (escalatorKey) and
// the nesting stays within maxEscalateDepth. It reads the text once,
// without decoding values; only keys with escapes are decoded.
func mayEscalate(text []byte) bool {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '{', '[':
			depth++
			if depth >= maxEscalateDepth {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			end, escaped := stringEnd(text, i)
			j := end
			for j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
				j++
			}
			if j < len(text) && text[j] == ':' {
				key := text[i+1 : end-1]
				if escaped {
					var s string
					if json.Unmarshal(text[i:end], &s) != nil {
						return true // unreachable for valid JSON; let the walk decide
					}
					key = []byte(s)
				}
				if escalatorKey(key) {
					return true
				}
			}
			i = end - 1
		}
	}
	return false
}

// stringEnd returns the index just past the string starting at text[i]
// (a quote) and whether it holds an escape.
func stringEnd(text []byte, i int) (end int, escaped bool) {
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(text), escaped
}

// escalatorKey reports whether the walk acts on a member of this name: a
// risky flag (riskyFlags, compared as normalizeKey compares) or a name with
// a scope word (scopeTokens, split as splitTokens splits). It does not
// allocate for names up to 64 bytes.
func escalatorKey(key []byte) bool {
	var buf [64]byte
	if risk.RiskyFlags[string(norm.AppendNormalizedKey(buf[:0], key))] {
		return true
	}
	for start, end := range norm.TokenBounds(key) {
		tok := buf[:0]
		for _, c := range key[start:end] {
			if norm.IsUpper(c) {
				c += 'a' - 'A'
			}
			tok = append(tok, c)
		}
		if _, ok := risk.ScopeTokens[string(tok)]; ok {
			return true
		}
	}
	return false
}

type scopeHit struct {
	to  risk.BlastRadius
	why string
}

type walker struct {
	nodes    int
	overflow bool
	flag     string
	scopes   []scopeHit
}

func (w *walker) walk(v any, depth int) {
	w.nodes++
	if depth > maxEscalateDepth || w.nodes > maxEscalateNodes {
		w.overflow = true
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val := x[k]
			nk := norm.NormalizeKey(k)
			if risk.RiskyFlags[nk] && truthy(val) {
				if w.flag == "" {
					w.flag = k
				}
				if nk == "allnamespaces" {
					w.scopes = append(w.scopes, scopeHit{risk.BlastCluster, fmt.Sprintf("argument %q is set", k)})
				}
			}
			if wildcard(val) {
				for _, tok := range norm.SplitTokens(k) {
					if b, ok := risk.ScopeTokens[tok]; ok {
						w.scopes = append(w.scopes, scopeHit{norm.RaiseBy(risk.BlastOrder, b, 1), fmt.Sprintf("argument %q is \"*\"", k)})
						break
					}
				}
			}
			w.walk(val, depth+1)
		}
	case []any:
		for _, item := range x {
			w.walk(item, depth+1)
		}
	}
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "", "false", "0", "no", "off":
			return false
		}
		return true
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

func wildcard(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x) == "*"
	case []any:
		for _, item := range x {
			if s, ok := item.(string); ok && strings.TrimSpace(s) == "*" {
				return true
			}
		}
	}
	return false
}

// escalationStates yields the metadata Escalate can produce from base, over
// all possible arguments.
func escalationStates(base risk.Effective) iter.Seq2[int, risk.Effective] {
	return func(yield func(int, risk.Effective) bool) {
		var seen [][2]int
		i := 0
		for _, level := range []risk.RiskLevel{base.RiskLevel, norm.RaiseBy(risk.RiskOrder, base.RiskLevel, 1)} {
			for _, b := range []risk.BlastRadius{base.BlastRadius, risk.BlastCluster, risk.BlastOrganization, risk.BlastGlobal} {
				b = norm.MaxEnum(risk.BlastOrder, base.BlastRadius, b)
				key := [2]int{level.Rank(), b.Rank()}
				if slices.Contains(seen, key) {
					continue
				}
				seen = append(seen, key)
				// The states share base's lists: callers only read them.
				s := base
				s.RiskLevel, s.BlastRadius = level, b
				if !yield(i, s) {
					return
				}
				i++
			}
		}
	}
}
