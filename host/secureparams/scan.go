package secureparams

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
	"github.com/agenthost/agenthost/internal/jsonlex"
)

// Limits on how much schema the host will reason about. A schema beyond them
// excludes its tool: a definition that big or deep is either a mistake or an
// attempt to exhaust the host.
const (
	// MaxSchemaDepth bounds how many subschemas deep the overlap walk goes,
	// counting each followed $ref as one level.
	MaxSchemaDepth = 64
	// MaxSchemaNodes bounds the JSON values in inputSchema and
	// secureInputSchema of one tool, taken together.
	MaxSchemaNodes = 10_000
	// maxJSONDepth bounds raw nesting: a subschema level costs one or two
	// JSON levels (not vs. properties/name).
	maxJSONDepth = 2 * MaxSchemaDepth
)

// problem is an exclusion before it is attached to a tool name.
type problem struct {
	rule   Rule
	reason string
}

func newProblem(rule Rule, format string, args ...any) *problem {
	return &problem{rule: rule, reason: fmt.Sprintf(format, args...)}
}

// scanResult is what one pass over a schema's tokens learns about it.
type scanResult struct {
	// anchors maps $anchor / $dynamicAnchor names to the JSON pointer of the
	// schema object declaring them.
	anchors map[string]string
	// headerOwners are the JSON pointers of the objects that carry an
	// x-mcp-header key.
	headerOwners []string
	// refs and fanOut say whether any object has a member named "$ref",
	// or one named after another keyword through which more than one
	// subschema can apply to a value (fanOutKeyword): what schemaExpansion
	// needs to know whether the expansion analysis can be skipped.
	refs, fanOut bool
}

// scanSchema makes one streaming pass over a schema document (iterative, so
// hostile nesting cannot blow the stack) and rejects what the host refuses
// to reason about: duplicate object keys (parsers disagree on which wins),
// nesting or size beyond the limits, external $ref, $dynamicRef and
// $recursiveRef, and an embedded $id when the document also uses $ref (it
// would change what a local reference means). nodes is the budget shared by
// the tool's schemas; it is decremented per JSON value.
func scanSchema(doc json.RawMessage, label string, nodes *int, known validity) (*scanResult, *problem) {
	res := &scanResult{anchors: map[string]string{}}
	var (
		hasRef      bool
		embeddedID  string
		dupAnchor   string
		dupAnchorAt string
	)
	err := walkTokens(doc, label, known, func(path []string, key string, kind jsonlex.Kind, raw []byte) *problem {
		*nodes--
		if *nodes < 0 {
			return newProblem(RuleLimits, "the tool's schemas exceed %d JSON values (limit reached in %s)", MaxSchemaNodes, label)
		}
		if len(path) > maxJSONDepth {
			return newProblem(RuleLimits, "%s is nested more than %d levels deep", label, maxJSONDepth)
		}
		if len(path) == 0 {
			return nil
		}
		owner := path[:len(path)-1]
		switch {
		case key == "$ref":
			res.refs = true
		case onepass.FanOutKeyword(key):
			res.fanOut = true
		}
		if key == "x-mcp-header" {
			res.headerOwners = append(res.headerOwners, pointer(owner))
		}
		if kind != jsonlex.String {
			return nil
		}
		switch key {
		case "$ref", "$dynamicRef", "$recursiveRef", "$id", "$anchor", "$dynamicAnchor":
		default:
			return nil
		}
		s := jsonlex.Unquote(raw)
		switch key {
		case "$ref":
			hasRef = true
			if !strings.HasPrefix(s, "#") {
				return newProblem(RuleExternalRef, "%s references an external schema %q at %s; the host never fetches schemas", label, s, schemajson.At(pointer(owner)))
			}
		case "$dynamicRef", "$recursiveRef":
			return newProblem(RuleDynamicRef, "%s uses %s at %s, which the host cannot resolve statically", label, key, schemajson.At(pointer(owner)))
		case "$id":
			if len(owner) > 0 && embeddedID == "" {
				embeddedID = pointer(owner)
			}
		case "$anchor", "$dynamicAnchor":
			if _, dup := res.anchors[s]; dup && dupAnchor == "" {
				dupAnchor, dupAnchorAt = s, pointer(owner)
			}
			res.anchors[s] = pointer(owner)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if dupAnchor != "" {
		return nil, newProblem(RuleMalformed, "%s declares anchor %q twice (again at %s)", label, dupAnchor, schemajson.At(dupAnchorAt))
	}
	if hasRef && embeddedID != "" {
		return nil, newProblem(RuleUnresolvedRef, "%s embeds a schema resource ($id at %s) and uses $ref; the host does not resolve references across resources", label, embeddedID)
	}
	return res, nil
}

// checkDuplicateKeys rejects a document in which any object repeats a key.
func checkDuplicateKeys(doc json.RawMessage, label string, known validity) *problem {
	return walkTokens(doc, label, known, func([]string, string, jsonlex.Kind, []byte) *problem { return nil })
}

// validity says whether a document is already known to be valid JSON (a
// part of a definition the listing validated as a whole), so that a scan
// can skip checking it again.
type validity bool

const (
	mayBeInvalid validity = false
	knownValid   validity = true
)

// walkTokens checks that doc is one valid JSON value, then calls visit for
// every value in it (not for member names or closing delimiters) with the
// path of member names and array indexes leading to it and, for an object
// member, its name. kind and raw describe the value (raw only for strings
// and scalars). It reports invalid JSON and repeated member names itself,
// naming the document label.
func walkTokens(doc json.RawMessage, label string, known validity, visit func(path []string, key string, kind jsonlex.Kind, raw []byte) *problem) *problem {
	if known != knownValid && !jsonlex.Valid(doc) {
		var v any
		err := json.Unmarshal(doc, &v)
		return newProblem(RuleMalformed, "%s is not valid JSON: %v", label, err)
	}
	type frame struct {
		object bool
		index  int
		// The object's member names are keys[keysFrom:] (a stack shared
		// by the nested objects), or large once there are many.
		keysFrom int
		large    map[string]struct{}
	}
	// Room for the usual schema's nesting and names, so that a walk grows
	// them rarely.
	var (
		stack = make([]frame, 0, 16)
		path  = make([]string, 0, 16)
		keys  = make([]string, 0, 32)
	)
	lx := jsonlex.New(doc)
	for {
		kind, raw := lx.Next()
		n := len(stack)
		switch kind {
		case jsonlex.End:
			return nil
		case jsonlex.Key:
			// The names are only compared and handed to visit, which
			// copies what it keeps: they may share doc's memory.
			text := schemajson.ViewPlain(raw, lx.Plain())
			if schemajson.RepeatedKey(&stack[n-1].large, &keys, stack[n-1].keysFrom, text) {
				return newProblem(RuleMalformed, "%s repeats the key %q in the object at %s", label, text, schemajson.At(pointer(path)))
			}
			path = append(path, text)
			continue
		case jsonlex.ObjectEnd, jsonlex.ArrayEnd:
			keys = keys[:stack[n-1].keysFrom]
			stack = stack[:n-1]
		default:
			key := ""
			if n > 0 {
				if stack[n-1].object {
					key = path[len(path)-1]
				} else {
					path = append(path, strconv.Itoa(stack[n-1].index))
				}
			}
			if p := visit(path, key, kind, raw); p != nil {
				return p
			}
			if kind == jsonlex.ObjectStart || kind == jsonlex.ArrayStart {
				stack = append(stack, frame{object: kind == jsonlex.ObjectStart, keysFrom: len(keys)})
				continue
			}
		}
		// A value is complete: step the enclosing container past it.
		if n := len(stack); n > 0 {
			if !stack[n-1].object {
				stack[n-1].index++
			}
			path = path[:len(path)-1]
		}
	}
}

// pointer renders a path as a JSON pointer (RFC 6901): "" for the root.
func pointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(schemajson.EscapePointer(seg))
	}
	return b.String()
}
