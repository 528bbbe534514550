// Package schemajson owns the JSON helpers of tool definitions that are
// already known to be valid JSON: decoding them as encoding/json would
// (DecodeValid, DecodeJSON), their canonical hash (CanonicalHashValid,
// CanonicalHash), strings that share the definition's memory (ViewString)
// and the duplicate-member check of a token walk (RepeatedKey).
package schemajson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agenthost/agenthost/internal/jsonlex"
)

// The listing path parses thousands of definitions at once. encoding/json's
// reflection-driven decoding (and re-encoding for the canonical hash) was
// most of a first listing's cost; these helpers do the same work with the
// lexer over documents already known to be valid JSON, and fall back to
// encoding/json wherever its exact behaviour is hard to reproduce (absurd
// nesting).

// MaxFastDepth bounds the recursion of the lexer-based decoder and
// canonicaliser; deeper documents take the encoding/json path, which has its
// own limit and error.
const MaxFastDepth = 512

var errTooDeep = errors.New("nesting too deep for the fast path")

// ViewString is jsonlex.Unquote without a copy for a string without
// escapes or non-ASCII bytes (nearly every key and most values of a schema):
// the result shares raw's memory. Only for documents that never change once
// read, such as a parsed definition's Raw (which the Tool keeps, and with
// it that memory); the result is otherwise the same string.
func ViewString(raw []byte) string {
	if len(raw) > 2 && jsonlex.PlainString(raw) {
		return unsafe.String(&raw[1], len(raw)-2)
	}
	return jsonlex.Unquote(raw)
}

// ViewPlain is ViewString for a string the lexer just read, whose
// PlainString verdict it already has (jsonlex.Lexer.Plain): the same string,
// without reading raw again when it is plain.
func ViewPlain(raw []byte, plain bool) string {
	switch {
	case !plain:
		return jsonlex.Unquote(raw)
	case len(raw) > 2:
		return unsafe.String(&raw[1], len(raw)-2)
	}
	return ""
}

// DecodeValid decodes a document json.Valid accepted, exactly as DecodeJSON
// would: objects as map[string]any (the last of repeated keys wins), numbers
// as json.Number, strings as encoding/json decodes them. Strings without
// escapes share doc's memory (see ViewString): doc must never change.
func DecodeValid(doc []byte) (any, error) {
	lx := jsonlex.New(doc)
	kind, raw := lx.Next()
	v, err := decodeValue(&lx, kind, raw, 0)
	if errors.Is(err, errTooDeep) {
		return DecodeJSON(doc)
	}
	return v, err
}

func decodeValue(lx *jsonlex.Lexer, kind jsonlex.Kind, raw []byte, depth int) (any, error) {
	switch kind {
	case jsonlex.ObjectStart:
		if depth >= MaxFastDepth {
			return nil, errTooDeep
		}
		obj := map[string]any{}
		for {
			k, kraw := lx.Next()
			if k == jsonlex.ObjectEnd {
				return obj, nil
			}
			if k != jsonlex.Key {
				return nil, errors.New("malformed object")
			}
			name := ViewPlain(kraw, lx.Plain())
			vk, vraw := lx.Next()
			v, err := decodeValue(lx, vk, vraw, depth+1)
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
	case jsonlex.ArrayStart:
		if depth >= MaxFastDepth {
			return nil, errTooDeep
		}
		list := []any{}
		for {
			k, vraw := lx.Next()
			if k == jsonlex.ArrayEnd {
				return list, nil
			}
			v, err := decodeValue(lx, k, vraw, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	case jsonlex.String, jsonlex.Key:
		return ViewPlain(raw, lx.Plain()), nil
	case jsonlex.Scalar:
		switch string(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return json.Number(string(raw)), nil
	default:
		return nil, errors.New("unexpected end of document")
	}
}

// CanonicalHashValid is CanonicalHash for a document json.Valid accepted,
// without decoding it: the canonical form (object keys sorted, the last of
// repeated keys kept, whitespace removed, strings re-encoded as
// encoding/json encodes them without HTML escaping, numbers verbatim) is
// written straight from the tokens.
func CanonicalHashValid(doc []byte) (string, error) {
	c := canonicaliser{out: make([]byte, 0, len(doc))}
	lx := jsonlex.New(doc)
	kind, raw := lx.Next()
	if err := c.value(&lx, kind, raw, 0); err != nil {
		if errors.Is(err, errTooDeep) {
			_, hash, err := CanonicalHash(doc)
			return hash, err
		}
		return "", err
	}
	sum := sha256.Sum256(c.out)
	return hex.EncodeToString(sum[:]), nil
}

type canonicaliser struct {
	out     []byte
	scratch []byte
}

type canonMember struct {
	key        string
	start, end int // the member's encoding ("key":value) in out
}

func (c *canonicaliser) value(lx *jsonlex.Lexer, kind jsonlex.Kind, raw []byte, depth int) error {
	switch kind {
	case jsonlex.ObjectStart:
		if depth >= MaxFastDepth {
			return errTooDeep
		}
		return c.object(lx, depth)
	case jsonlex.ArrayStart:
		if depth >= MaxFastDepth {
			return errTooDeep
		}
		c.out = append(c.out, '[')
		for i := 0; ; i++ {
			k, vraw := lx.Next()
			if k == jsonlex.ArrayEnd {
				c.out = append(c.out, ']')
				return nil
			}
			if i > 0 {
				c.out = append(c.out, ',')
			}
			if err := c.value(lx, k, vraw, depth+1); err != nil {
				return err
			}
		}
	case jsonlex.String, jsonlex.Key:
		c.out = appendCanonicalString(c.out, raw)
		return nil
	case jsonlex.Scalar:
		c.out = append(c.out, raw...)
		return nil
	default:
		return errors.New("unexpected end of document")
	}
}

func (c *canonicaliser) object(lx *jsonlex.Lexer, depth int) error {
	start := len(c.out)
	var members []canonMember
	sorted := true
	for {
		k, kraw := lx.Next()
		if k == jsonlex.ObjectEnd {
			break
		}
		if k != jsonlex.Key {
			return errors.New("malformed object")
		}
		m := canonMember{key: jsonlex.Unquote(kraw), start: len(c.out)}
		if n := len(members); n > 0 && members[n-1].key >= m.key {
			sorted = false
		}
		c.out = appendCanonicalString(c.out, kraw)
		c.out = append(c.out, ':')
		vk, vraw := lx.Next()
		if err := c.value(lx, vk, vraw, depth+1); err != nil {
			return err
		}
		m.end = len(c.out)
		members = append(members, m)
	}
	if sorted {
		// Already in order without repeats: insert the separators.
		c.scratch = append(c.scratch[:0], c.out[start:]...)
		c.out = append(c.out[:start], '{')
		for i, m := range members {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[m.start-start:m.end-start]...)
		}
		c.out = append(c.out, '}')
		return nil
	}
	// Stable, so that of repeated keys the last one read is the last kept.
	slices.SortStableFunc(members, func(a, b canonMember) int { return strings.Compare(a.key, b.key) })
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	c.out = append(c.out[:start], '{')
	first := true
	for i, m := range members {
		if i+1 < len(members) && members[i+1].key == m.key {
			continue // a later duplicate wins, as in a decoded map
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, c.scratch[m.start-start:m.end-start]...)
	}
	c.out = append(c.out, '}')
	return nil
}

// appendCanonicalString appends a raw JSON string as encoding/json encodes
// its decoded text (no HTML escaping). Plain ASCII strings are their own
// encoding; others are decoded and re-encoded.
func appendCanonicalString(dst, raw []byte) []byte {
	if jsonlex.PlainString(raw) {
		return append(dst, raw...)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(jsonlex.Unquote(raw)) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// CanonicalHash decodes raw and hashes it with object keys sorted and
// whitespace removed. Numbers keep their literal text (json.Number), so 1
// and 1.0 differ: the hash identifies what the server sent, not its numeric
// meaning. The decoded document is returned for reuse.
func CanonicalHash(raw []byte) (any, string, error) {
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalising definition: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, "", fmt.Errorf("canonicalising definition: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return v, hex.EncodeToString(sum[:]), nil
}

// DecodeJSON decodes one JSON document, numbers as json.Number, refusing
// trailing data.
func DecodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the top-level value")
	}
	return v, nil
}

// SmallObject is the member count up to which repeated names are found by
// comparing with the object's earlier names; beyond it, with a map.
const SmallObject = 16

// RepeatedKey records an object's member name and reports whether the
// object already had it. The names of a small object are keys[from:]; a
// large one's move to *large.
func RepeatedKey(large *map[string]struct{}, keys *[]string, from int, key string) bool {
	if *large != nil {
		if _, dup := (*large)[key]; dup {
			return true
		}
		(*large)[key] = struct{}{}
		return false
	}
	if slices.Contains((*keys)[from:], key) {
		return true
	}
	*keys = append(*keys, key)
	if len(*keys)-from > SmallObject {
		m := make(map[string]struct{}, 2*SmallObject)
		for _, k := range (*keys)[from:] {
			m[k] = struct{}{}
		}
		*large = m
		*keys = (*keys)[:from]
	}
	return false
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// EscapePointer escapes a JSON pointer segment (RFC 6901).
func EscapePointer(seg string) string {
	if !strings.ContainsAny(seg, "~/") {
		return seg
	}
	return pointerEscaper.Replace(seg)
}

// At renders a JSON pointer for a message.
func At(ptr string) string {
	if ptr == "" {
		return "the root"
	}
	return ptr
}

// pointerUnescaper decodes a JSON pointer segment (RFC 6901).
var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// Resolve turns "#", "#/json/pointer" (percent-encoded as a URI fragment,
// with ~0 and ~1 escapes) or "#anchor" (anchors maps names to pointers)
// into the node of the decoded document root it names, and its pointer;
// ok is false when it names nothing.
func Resolve(root any, anchors map[string]string, ref string) (node any, ptr string, ok bool) {
	unresolved := func() (any, string, bool) { return nil, "", false }
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return unresolved()
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		ptr, ok := anchors[frag]
		if !ok {
			return unresolved()
		}
		frag = ptr
	}
	node = root
	if frag == "" {
		return node, "", true
	}
	for _, seg := range strings.Split(frag[1:], "/") {
		if strings.IndexByte(seg, '~') >= 0 {
			seg = pointerUnescaper.Replace(seg)
		}
		switch v := node.(type) {
		case map[string]any:
			next, found := v[seg]
			if !found {
				return unresolved()
			}
			node = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(v) || strconv.Itoa(i) != seg {
				return unresolved()
			}
			node = v[i]
		default:
			return unresolved()
		}
	}
	return node, frag, true
}
