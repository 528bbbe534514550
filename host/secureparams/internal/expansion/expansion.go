// Package expansion owns the bound on a JSON Schema's validation cost: how
// many subschema applications validating one value may take, unfolded
// through $ref and the in-place applicators and multiplied per argument
// level (Measure), the $ref-only shortcut that measures the commonest
// schema without the graph (RefOnly), and the memo of analyses by schema
// text. It reads decoded schemas (schemajson) and reports only the limit;
// structural problems are secureparams' walker's.
package expansion

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// Validation cost limits. JSON Schema validators (the host's included) do
// not share work between applicators: every anyOf/allOf/oneOf branch and
// every $ref is evaluated afresh, and every failing branch adds to the error
// output. A schema of a few hundred bytes whose $defs refer to each other
// twice per level therefore costs 2^levels evaluations of one value, and the
// same holds for a recursive schema that applies itself twice to the same
// child value. The host bounds that cost before it validates anything.
const (
	// MaxSchemaExpansion bounds the subschema applications that validating
	// one JSON value may take: the schema graph unfolded through $ref and the
	// in-place applicators (allOf, anyOf, oneOf, not, if/then/else,
	// dependentSchemas), multiplied by how many times the enclosing levels
	// apply a subschema to the same child value (properties together with
	// patternProperties, items with contains, recursion through $ref),
	// counted for every nesting level of arguments up to MaxArgumentDepth.
	// A schema beyond it excludes its tool (RuleExpansion).
	MaxSchemaExpansion = 10_000
	// MaxValidationWork bounds one validation: the JSON values of the
	// instance times the schema's expansion (Tool.ValidationCost). Beyond it
	// the call is refused before the validator runs.
	MaxValidationWork = 4_000_000
	// maxExpansionSteps bounds the analysis itself.
	maxExpansionSteps = 1_000_000
)

// Problem says why a schema's cost is beyond the limit (secureparams'
// RuleExpansion). Problems are never modified once made, so they are
// shared.
type Problem struct{ Reason string }

func newProblem(format string, args ...any) *Problem {
	return &Problem{Reason: fmt.Sprintf(format, args...)}
}

// xnode is one schema object of the graph, identified by its map.
type xnode struct {
	id int // creation order, for a stable state key
	// The JSON pointer, built only for a reason: parent's, then kw and key
	// (key escaped, empty when kw alone), or abs for a $ref target.
	parent  *xnode
	kw, key string
	abs     string
	edges   []edge
	props   map[string]*xnode // properties
	idx     map[int]*xnode    // prefixItems, or items as a list
	onStack bool
}

// edge is a subschema of a node other than a property or a positional item.
type edge struct {
	kind edgeKind
	n    *xnode
}

type edgeKind uint8

const (
	inPlace     edgeKind = iota // the same value: $ref, allOf, anyOf, oneOf, not, if/then/else, dependentSchemas
	objAny                      // any member value: patternProperties, unevaluatedProperties
	objRest                     // members not in properties: additionalProperties
	memberNames                 // member names: propertyNames
	arrAny                      // any item: contains, unevaluatedItems
	arrRest                     // items past the positional ones: items, additionalItems
)

// simple: nothing applies below this schema, in place or to children.
func (n *xnode) simple() bool {
	return len(n.edges) == 0 && n.props == nil && n.idx == nil
}

// ptr is the node's JSON pointer (first path it was reached by).
func (n *xnode) ptr() string {
	if n.parent == nil {
		return n.abs
	}
	p := n.parent.ptr() + "/" + n.kw
	if n.key != "" {
		p += "/" + schemajson.EscapePointer(n.key)
	}
	return p
}

// expansion measures a decoded schema (see MaxSchemaExpansion). It returns
// the largest number of applications to one value, or a problem when the
// limit is exceeded. Structural problems are the walker's to report; here
// they end the analysis quietly.
type expansion struct {
	label   string
	root    any
	anchors map[string]string
	nodes   map[uintptr]*xnode
	slab    []xnode // nodes are allocated in chunks
	steps   int
}

// fanOutKeywords are the keywords through which more than one subschema
// can apply to one value. A schema whose text holds none of them (and no
// escape, which could spell one) applies exactly one subschema to each
// value: its analysis is skipped.
var fanOutKeywords = [][]byte{
	[]byte(`"$ref"`), []byte(`"allOf"`), []byte(`"anyOf"`), []byte(`"oneOf"`), []byte(`"not"`),
	[]byte(`"if"`), []byte(`"then"`), []byte(`"else"`), []byte(`"dependentSchemas"`), []byte(`"dependencies"`),
	[]byte(`"patternProperties"`), []byte(`"unevaluatedProperties"`), []byte(`"unevaluatedItems"`),
	[]byte(`"contains"`), []byte(`"propertyNames"`), []byte(`\`),
}

// fanOut reports whether raw holds a fan-out keyword at all, and whether
// "$ref" is the only one.
func fanOut(raw []byte) (may, onlyRef bool) {
	for _, kw := range fanOutKeywords {
		if bytes.Contains(raw, kw) {
			if string(kw) != `"$ref"` {
				return true, false
			}
			may = true
		}
	}
	return may, may
}

// FanOutByTokens makes Measure read what may fan out from the
// member names the scan of its tokens saw (hasRefs, hasFanOut) instead of
// searching the schema's text for the keywords (fanOut), which also
// counted a keyword written in a string value and any escape. Only
// FuzzFanOutByTokens turns it off, to compare the two.
var FanOutByTokens = true

// LeafShortcut lets the analysis skip the schema objects
// onepass.ReadsNothing accepts. Only FuzzLeafShortcut turns it off, to
// compare with the analysis that looks every keyword up.
var LeafShortcut = true

// RefOnlyShortcut lets Measure measure the schemas RefOnly
// accepts without the graph analysis. Only tests and benchmarks turn it
// off (FuzzLeafShortcut, BenchmarkParseToolDistinct), to compare with the
// full analysis.
var RefOnlyShortcut = true

// MaxRefOnlySchema is the largest schema text RefOnly measures:
// far below what could take the full analysis maxExpansionSteps steps.
const MaxRefOnlySchema = 256 << 10

// RefOnly measures, without building the schema graph, the
// commonest schema that may fan out: one whose only fan-out keyword is
// $ref, where every $ref reached from the root sits in a schema object
// holding no other keyword the analysis reads and points at a schema that
// holds no $ref at all (a $defs entry used by a property, say). No value
// then has more than the $ref and its target applied to it, so the cost is
// 2 when such a $ref is reached within MaxArgumentDepth levels of
// arguments and its target is a schema object, else 1. Any other shape (a
// cycle, a chain of references, a combinator, two subschemas applying to
// the same items) returns false and gets the full analysis;
// FuzzRefOnlyExpansion checks that both agree wherever this one answers.
func RefOnly(raw []byte, root any, anchors map[string]string) (int64, bool) {
	if may, onlyRef := fanOut(raw); may && !onlyRef {
		return 0, false
	}
	return measureRefOnly(raw, root, anchors)
}

// measureRefOnly is RefOnly for a schema text known to hold no
// fan-out keyword but "$ref".
func measureRefOnly(raw []byte, root any, anchors map[string]string) (int64, bool) {
	if len(raw) > MaxRefOnlySchema {
		return 0, false
	}
	m := refOnlyMeasure{root: root, anchors: anchors, cost: 1}
	if !m.visit(root, 0) {
		return 0, false
	}
	return m.cost, true
}

// refOnlyMeasure is RefOnly's walk over the subschemas that apply
// to the values one level down (as expansion.children finds them).
type refOnlyMeasure struct {
	root    any
	anchors map[string]string
	cost    int64
	// targets are the $ref targets already found free of $ref.
	targets []map[string]any
}

func (m *refOnlyMeasure) visit(v any, depth int) bool {
	obj, ok := v.(map[string]any)
	if !ok || depth > guard.MaxArgumentDepth {
		return true
	}
	if ref, has := obj["$ref"]; has {
		return m.ref(obj, ref)
	}
	if sameItems(obj) {
		return false
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for _, sub := range props {
			if !m.visit(sub, depth+1) {
				return false
			}
		}
	}
	for _, kw := range []string{"additionalProperties", "additionalItems"} {
		if !m.visit(obj[kw], depth+1) {
			return false
		}
	}
	for _, kw := range []string{"prefixItems", "items"} {
		switch sub := obj[kw].(type) {
		case []any:
			for _, item := range sub {
				if !m.visit(item, depth+1) {
					return false
				}
			}
		default:
			if kw == "items" && !m.visit(sub, depth+1) {
				return false
			}
		}
	}
	return true
}

// ref measures a schema object holding $ref: it applies itself and its
// target to the value, and nothing below but the target's own subschemas,
// which hold no $ref and so apply one each.
func (m *refOnlyMeasure) ref(obj map[string]any, ref any) bool {
	s, ok := ref.(string)
	if !ok {
		return false
	}
	for k := range obj {
		switch k {
		case "$ref", "required", "dependentRequired", "contentSchema", "$defs", "definitions":
			// Read by the walker only.
		default:
			if onepass.ReadsKeyword(k) {
				return false
			}
		}
	}
	target, _, ok := schemajson.Resolve(m.root, m.anchors, s)
	if !ok {
		return false
	}
	tobj, ok := target.(map[string]any)
	if !ok {
		return true // no schema object: only the $ref applies
	}
	if !slices.ContainsFunc(m.targets, func(t map[string]any) bool { return sameMap(t, tobj) }) {
		if !plainTarget(tobj) {
			return false
		}
		m.targets = append(m.targets, tobj)
	}
	m.cost = 2
	return true
}

func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// plainTarget reports whether a $ref target holds no "$ref" member
// anywhere (in any position, schema or not) and no object to whose items
// two subschemas apply.
func plainTarget(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, has := v["$ref"]; has || sameItems(v) {
			return false
		}
		for _, sub := range v {
			if !plainTarget(sub) {
				return false
			}
		}
	case []any:
		for _, sub := range v {
			if !plainTarget(sub) {
				return false
			}
		}
	}
	return true
}

// sameItems reports a schema object whose array items may get two of its
// subschemas at once in the analysis: items and additionalItems both
// schemas (every item past the positional ones), or prefixItems and items
// both lists (positions that both name).
func sameItems(obj map[string]any) bool {
	_, itemsMap := obj["items"].(map[string]any)
	_, addMap := obj["additionalItems"].(map[string]any)
	_, itemsList := obj["items"].([]any)
	_, prefixList := obj["prefixItems"].([]any)
	return (itemsMap && addMap) || (itemsList && prefixList)
}

// Measure measures a schema's expansion (see expansion). Only a
// schema whose text may fan out is analysed, and its result is remembered
// by text (see expansionMemo): the analysis depends on nothing else, and
// servers often list the same schema for many tools.
//
// hasRefs and hasFanOut say whether any object of the schema has a member
// named "$ref", or one named after another fan-out keyword (as the scan of
// its tokens found them); anchors are its $anchor names.
func Measure(label string, raw []byte, root any, anchors map[string]string, hasRefs, hasFanOut bool) (int64, *Problem) {
	may, onlyRef := hasRefs || hasFanOut, hasRefs && !hasFanOut
	if !FanOutByTokens {
		may, onlyRef = fanOut(raw)
	}
	if !may {
		return 1, nil
	}
	if RefOnlyShortcut && onlyRef {
		if cost, ok := measureRefOnly(raw, root, anchors); ok {
			return cost, nil
		}
	}
	if r, ok := expansionMemo.get(label, raw); ok {
		return r.cost, r.p
	}
	cost, p := Analyze(label, raw, root, anchors)
	expansionMemo.put(label, raw, expansionResult{cost: cost, p: p})
	return cost, p
}

// Bounds of the expansion memo: entries, bytes of schema text kept, and
// the largest schema remembered.
const (
	MaxMemoEntries         = 4096
	MaxMemoBytes           = 8 << 20
	maxExpansionMemoSchema = 64 << 10
)

// expansionResult is one analysis: the cost, or the problem (problems are
// never modified once made, so they are shared).
type expansionResult struct {
	cost int64
	p    *Problem
}

// expansionMemo maps (label, schema text) to its analysis, for every
// listing of the process. It is bounded: when full it starts over.
var expansionMemo expansionCache

type expansionCache struct {
	mu      sync.Mutex
	byLabel map[string]map[string]expansionResult
	entries int
	bytes   int
}

func (c *expansionCache) get(label string, raw []byte) (expansionResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byLabel[label][string(raw)]
	return r, ok
}

func (c *expansionCache) put(label string, raw []byte, r expansionResult) {
	if len(raw) > maxExpansionMemoSchema {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byLabel == nil || c.entries >= MaxMemoEntries || c.bytes+len(raw) > MaxMemoBytes {
		c.byLabel, c.entries, c.bytes = map[string]map[string]expansionResult{}, 0, 0
	}
	m := c.byLabel[label]
	if m == nil {
		m = map[string]expansionResult{}
		c.byLabel[label] = m
	}
	if _, ok := m[string(raw)]; !ok {
		m[string(raw)] = r
		c.entries++
		c.bytes += len(raw)
	}
}

// Analyze is Measure's analysis, without the memo.
func Analyze(label string, raw []byte, root any, anchors map[string]string) (int64, *Problem) {
	x := &expansion{label: label, root: root, anchors: anchors, nodes: map[uintptr]*xnode{}}
	top := x.nodeAt(root, "")
	if top == nil {
		return 1, nil
	}
	seen := map[string]bool{}
	level := []map[*xnode]int64{{top: 1}}
	var worst int64 = 1
	for depth := 0; depth <= guard.MaxArgumentDepth && len(level) > 0; depth++ {
		var next []map[*xnode]int64
		for _, st := range level {
			closure, total, p := x.close(st)
			if p != nil {
				return 0, p
			}
			worst = max(worst, total)
			for _, child := range x.children(closure) {
				if total, ok := simpleTotal(child); ok {
					// Nothing below: its cost is its size.
					if total > MaxSchemaExpansion {
						return 0, x.tooMany(sortedMembers(child)[0])
					}
					worst = max(worst, total)
					continue
				}
				key := stateKey(child)
				if !seen[key] {
					seen[key] = true
					next = append(next, child)
				}
			}
			if x.steps > maxExpansionSteps {
				return 0, x.tooComplex()
			}
		}
		level = next
	}
	return worst, nil
}

func (x *expansion) tooComplex() *Problem {
	return newProblem("%s is too intricate to bound its validation cost (more than %d analysis steps)", x.label, maxExpansionSteps)
}

func (x *expansion) tooMany(from *xnode) *Problem {
	return newProblem("%s expands to more than %d subschema applications for one value (anyOf/allOf/oneOf/$ref fan-out from %s); validating it could exhaust the host's memory", x.label, MaxSchemaExpansion, schemajson.At(from.ptr()))
}

// simpleTotal sums a state whose members apply nothing further.
func simpleTotal(st map[*xnode]int64) (int64, bool) {
	var total int64
	for n, c := range st {
		if !n.simple() {
			return 0, false
		}
		total += c
	}
	return total, true
}

// node returns the graph node of a schema value, building it on first use;
// nil for anything that is not a schema object.
func (x *expansion) node(v any, parent *xnode, kw, key string) *xnode {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	id := uintptr(reflect.ValueOf(obj).UnsafePointer())
	if n, ok := x.nodes[id]; ok {
		return n
	}
	if len(x.slab) == cap(x.slab) {
		x.slab = make([]xnode, 0, min(max(2*cap(x.slab), 4), 64))
	}
	x.slab = append(x.slab, xnode{id: len(x.nodes), parent: parent, kw: kw, key: key})
	n := &x.slab[len(x.slab)-1]
	x.nodes[id] = n
	x.steps++
	if LeafShortcut && onepass.ReadsNothing(obj) {
		return n
	}
	if ref, ok := obj["$ref"].(string); ok {
		if target, where, ok := schemajson.Resolve(x.root, x.anchors, ref); ok {
			if t := x.nodeAt(target, where); t != nil {
				n.edges = append(n.edges, edge{inPlace, t})
			}
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := obj[kw].([]any); ok {
			for i, s := range list {
				x.add(inPlace, s, n, kw, strconv.Itoa(i))
			}
		}
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if s, ok := obj[kw]; ok {
			x.add(inPlace, s, n, kw, "")
		}
	}
	for _, kw := range []string{"dependentSchemas", "dependencies"} {
		if m, ok := obj[kw].(map[string]any); ok {
			for k, s := range m {
				x.add(inPlace, s, n, kw, k)
			}
		}
	}
	if m, ok := obj["properties"].(map[string]any); ok {
		for k, s := range m {
			if c := x.node(s, n, "properties", k); c != nil {
				if n.props == nil {
					n.props = make(map[string]*xnode, len(m))
				}
				n.props[k] = c
			}
		}
	}
	if m, ok := obj["patternProperties"].(map[string]any); ok {
		for k, s := range m {
			x.add(objAny, s, n, "patternProperties", k)
		}
	}
	if s, ok := obj["unevaluatedProperties"]; ok {
		x.add(objAny, s, n, "unevaluatedProperties", "")
	}
	if s, ok := obj["additionalProperties"]; ok {
		x.add(objRest, s, n, "additionalProperties", "")
	}
	if s, ok := obj["propertyNames"]; ok {
		x.add(memberNames, s, n, "propertyNames", "")
	}
	for _, kw := range []string{"prefixItems", "items"} {
		if list, ok := obj[kw].([]any); ok {
			for i, s := range list {
				if c := x.node(s, n, kw, strconv.Itoa(i)); c != nil {
					if n.idx == nil {
						n.idx = map[int]*xnode{}
					}
					n.idx[i] = c
				}
			}
		}
	}
	if s, ok := obj["items"].(map[string]any); ok {
		x.add(arrRest, s, n, "items", "")
	}
	if s, ok := obj["additionalItems"]; ok {
		x.add(arrRest, s, n, "additionalItems", "")
	}
	for _, kw := range []string{"contains", "unevaluatedItems"} {
		if s, ok := obj[kw]; ok {
			x.add(arrAny, s, n, kw, "")
		}
	}
	return n
}

// nodeAt is node for a $ref target, whose pointer is known whole.
func (x *expansion) nodeAt(v any, where string) *xnode {
	n := x.node(v, nil, "", "")
	if n != nil && n.parent == nil && n.abs == "" {
		n.abs = where
	}
	return n
}

func (x *expansion) add(kind edgeKind, v any, parent *xnode, kw, key string) {
	if n := x.node(v, parent, kw, key); n != nil {
		parent.edges = append(parent.edges, edge{kind, n})
	}
}

// close unfolds a state's members through their in-place applicators,
// counting every application with its multiplicity. An in-place cycle is
// counted once (the validator stops it with an error).
func (x *expansion) close(st map[*xnode]int64) (map[*xnode]int64, int64, *Problem) {
	closure := make(map[*xnode]int64, len(st))
	var total int64
	var visit func(n *xnode, mult int64) bool
	visit = func(n *xnode, mult int64) bool {
		x.steps++
		total += mult
		closure[n] += mult
		if total > MaxSchemaExpansion {
			return false
		}
		if x.steps > maxExpansionSteps {
			return false
		}
		n.onStack = true
		defer func() { n.onStack = false }()
		for _, e := range n.edges {
			if e.kind != inPlace {
				continue
			}
			s := e.n
			if s.onStack {
				total += mult
				continue
			}
			if !visit(s, mult) {
				return false
			}
		}
		return true
	}
	for n, c := range st {
		if !visit(n, c) {
			if x.steps > maxExpansionSteps {
				return nil, 0, x.tooComplex()
			}
			return nil, 0, x.tooMany(n)
		}
	}
	return closure, total, nil
}

// children returns the states of the values one level down: one per named
// property, one for the other members, one for the member names, one per
// positional array item, one for the other items. A subschema counts for a
// child whenever it may apply to it (a pattern is assumed to match).
func (x *expansion) children(closure map[*xnode]int64) []map[*xnode]int64 {
	var names map[string]bool
	var idxs map[int]bool
	var keys map[*xnode]int64
	for n, c := range closure {
		for k := range n.props {
			if names == nil {
				names = map[string]bool{}
			}
			names[k] = true
		}
		for i := range n.idx {
			if idxs == nil {
				idxs = map[int]bool{}
			}
			idxs[i] = true
		}
		for _, e := range n.edges {
			if e.kind == memberNames {
				keys = addCount(keys, e.n, c)
			}
		}
	}
	var out []map[*xnode]int64
	member := func(name string, named bool) {
		var st map[*xnode]int64
		for n, c := range closure {
			declared := false
			for _, e := range n.edges {
				if e.kind == objAny {
					st = addCount(st, e.n, c)
				}
			}
			if s, ok := n.props[name]; named && ok {
				st = addCount(st, s, c)
				declared = true
			}
			for _, e := range n.edges {
				if e.kind == objRest && !declared {
					st = addCount(st, e.n, c)
				}
			}
		}
		if st != nil {
			out = append(out, st)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		member(k, true)
	}
	member("", false)
	if keys != nil {
		out = append(out, keys)
	}
	item := func(i int, positional bool) {
		var st map[*xnode]int64
		for n, c := range closure {
			positioned := false
			if s, ok := n.idx[i]; positional && ok {
				st = addCount(st, s, c)
				positioned = true
			}
			for _, e := range n.edges {
				if e.kind == arrAny || (e.kind == arrRest && !positioned) {
					st = addCount(st, e.n, c)
				}
			}
		}
		if st != nil {
			out = append(out, st)
		}
	}
	idxList := make([]int, 0, len(idxs))
	for i := range idxs {
		idxList = append(idxList, i)
	}
	sort.Ints(idxList)
	for _, i := range idxList {
		item(i, true)
	}
	item(0, false)
	return out
}

func addCount(m map[*xnode]int64, n *xnode, c int64) map[*xnode]int64 {
	if m == nil {
		m = map[*xnode]int64{}
	}
	m[n] = min(m[n]+c, MaxSchemaExpansion+1)
	return m
}

func sortedMembers(st map[*xnode]int64) []*xnode {
	out := make([]*xnode, 0, len(st))
	for n := range st {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *xnode) int { return a.id - b.id })
	return out
}

// stateKey identifies a state by its members and counts.
func stateKey(st map[*xnode]int64) string {
	members := sortedMembers(st)
	buf := make([]byte, 0, len(members)*8)
	for _, n := range members {
		buf = binary.AppendUvarint(buf, uint64(n.id))
		buf = binary.AppendUvarint(buf, uint64(st[n]))
	}
	return string(buf)
}

// ResetMemo empties the memo (tests and benchmarks, so that each side
// analyses afresh).
func ResetMemo() {
	expansionMemo.mu.Lock()
	defer expansionMemo.mu.Unlock()
	expansionMemo.byLabel, expansionMemo.entries, expansionMemo.bytes = nil, 0, 0
}

// MemoSize is the memo's entries and bytes of schema text (tests).
func MemoSize() (entries, bytes int) {
	expansionMemo.mu.Lock()
	defer expansionMemo.mu.Unlock()
	return expansionMemo.entries, expansionMemo.bytes
}
