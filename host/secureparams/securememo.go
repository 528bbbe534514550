package secureparams

import (
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
)

// secureHalf is what the analysis of a tool learns from its
// secureInputSchema alone, remembered per schema text (secureMemo): real
// servers share one secure schema (their tenancy parameters) across their
// tools, and a catalog lists each server's tools together. It is recorded
// only for a secure schema with no problem of its own (root, scan, numbers,
// walk, undeclared names, expansion, the x-mcp-header rules that read
// secureInputSchema only), so a tool that finds it skips those steps and
// keeps the rest, in the same order: the shared node budget, the overlap
// with its inputSchema and the headers both schemas bind.
// FuzzSecureMemo compares every verdict with the analysis without it.
type secureHalf struct {
	// nodes is how many JSON values the secure schema's scan takes from
	// the tool's budget: a tool with fewer left runs the full analysis,
	// which reports the limit.
	nodes int
	// params, rootRequired and headers are extractSecureBasics' fields;
	// walkRequired the names the walk found required unconditionally.
	params, rootRequired, walkRequired []string
	headers                            []HeaderBinding
	// names and patterns are the walk's, for the overlap check.
	names    []foundName
	patterns []foundPattern
	// headerWarnings are secretHeaderWarnings' of headers.
	headerWarnings []string
	// headerNames are the secure parameters with an x-mcp-header, in
	// checkSecureHeaders' order, with the header lower-cased.
	headerNames []secureHeaderName

	// For a tool the single pass decides (cleanByPass): params as a set,
	// params prepared for the name-variant check, and SecureRequired
	// (rootRequired and walkRequired, sorted, without repeats).
	declared map[string]bool
	targets  []guard.Target
	required []string
}

// secureHeaderName is a secure parameter and its x-mcp-header, as written
// and lower-cased.
type secureHeaderName struct {
	name, header, lower string
}

// walker is a schemaWalker holding the remembered names and patterns, as
// checkOverlap reads them.
func (h *secureHalf) walker() *schemaWalker {
	return &schemaWalker{label: "secureInputSchema", names: h.names, patterns: h.patterns}
}

// apply sets the fields extractSecureBasics would set, as copies.
func (h *secureHalf) apply(t *Tool) {
	t.SecureParams = slices.Clone(h.params)
	t.SecureRequired = slices.Clone(h.rootRequired)
	t.SecureHeaders = slices.Clone(h.headers)
}

// newSecureHalf records an analysis whose secure steps all passed. Its
// strings are copied: a definition's strings share its bytes, and the
// memo must not keep that definition alive.
func newSecureHalf(t *Tool, rootRequired []string, nodes int, sw *schemaWalker, headerNames []secureHeaderName) *secureHalf {
	h := &secureHalf{
		nodes:          nodes,
		params:         cloneStrings(t.SecureParams),
		rootRequired:   cloneStrings(rootRequired),
		walkRequired:   make([]string, len(sw.required)),
		names:          make([]foundName, len(sw.names)),
		patterns:       make([]foundPattern, len(sw.patterns)),
		headerNames:    make([]secureHeaderName, len(headerNames)),
		headerWarnings: secretHeaderWarnings(t),
	}
	for i, n := range sw.required {
		h.walkRequired[i] = strings.Clone(n.name)
	}
	if t.SecureHeaders != nil {
		h.headers = make([]HeaderBinding, len(t.SecureHeaders))
	}
	for i, b := range t.SecureHeaders {
		h.headers[i] = HeaderBinding{Param: strings.Clone(b.Param), Header: strings.Clone(b.Header)}
	}
	for i, n := range sw.names {
		h.names[i] = foundName{name: strings.Clone(n.name), ptr: strings.Clone(n.ptr), kw: strings.Clone(n.kw), key: strings.Clone(n.key), required: n.required}
	}
	for i, p := range sw.patterns {
		h.patterns[i] = foundPattern{source: strings.Clone(p.source), re: p.re, at: strings.Clone(p.at)}
	}
	for i, n := range headerNames {
		h.headerNames[i] = secureHeaderName{name: strings.Clone(n.name), header: strings.Clone(n.header), lower: strings.Clone(n.lower)}
	}
	h.declared = declaredSet(h.params)
	h.targets = guard.Targets(h.params)
	h.required = guard.SortedUnique(append(slices.Clone(h.rootRequired), h.walkRequired...))
	return h
}

func cloneStrings(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.Clone(s)
	}
	return out
}

// Bounds of the secure-schema memo: entries, bytes of schema text kept
// (each entry keeps about as much again of names), and the largest schema
// remembered.
const (
	maxSecureMemoEntries = 4096
	maxSecureMemoBytes   = 8 << 20
	maxSecureMemoSchema  = 64 << 10
)

// secureMemoOn turns the memo off for FuzzSecureMemo's reference side.
var secureMemoOn = true

// secureMemo maps a secureInputSchema's text to its secureHalf, for every
// listing of the process. It is bounded: when full it starts over.
var secureMemo secureCache

type secureCache struct {
	mu      sync.Mutex
	byText  map[string]*secureHalf
	entries int
	bytes   int
}

func (c *secureCache) get(raw []byte) *secureHalf {
	if !secureMemoOn {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byText[string(raw)]
}

func (c *secureCache) put(raw []byte, h *secureHalf) {
	if !secureMemoOn || len(raw) > maxSecureMemoSchema {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byText == nil || c.entries >= maxSecureMemoEntries || c.bytes+len(raw) > maxSecureMemoBytes {
		c.byText, c.entries, c.bytes = map[string]*secureHalf{}, 0, 0
	}
	if _, ok := c.byText[string(raw)]; !ok {
		c.byText[string(raw)] = h
		c.entries++
		c.bytes += len(raw)
	}
}

// reset empties the memo (tests).
func (c *secureCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byText, c.entries, c.bytes = nil, 0, 0
}
