// Package toolset owns mcptest's tools file: the tools served (verbatim
// entries, a secureInputSchema read as far as SEP-3221 needs), the x-test
// behaviours stripped from them, what a client sees of them by the
// extensions it negotiated, pages and cursors, and the checks of a call's
// secureArguments and Mcp-Param-* headers.
package toolset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Tool is one served entry. Entries need not be valid tools: a file may list
// a non-object or a nameless tool on purpose, and it is served verbatim.
type Tool struct {
	Name   string
	Fields map[string]json.RawMessage // nil when the entry is not an object
	Raw    json.RawMessage            // the entry without x-test
	Secure *SecureSchema              // nil without secureInputSchema
	Test   Behaviour
}

// Set is an immutable snapshot of the served tools.
type Set struct {
	Tools      []*Tool
	BaseDir    string // listChanged paths resolve against it
	Generation uint64 // changes with every switch, invalidating cursors
}

// Find is the callable tool called name, or nil.
func (ts *Set) Find(name string) *Tool {
	for _, t := range ts.Tools {
		if t.Fields != nil && t.Name == name {
			return t
		}
	}
	return nil
}

// Load reads the tools file at path.
func Load(path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tools file: %w", err)
	}
	ts, err := Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("tools file %s: %w", path, err)
	}
	return ts, nil
}

// Parse reads a tools file's content; listChanged paths resolve against
// baseDir.
func Parse(data []byte, baseDir string) (*Set, error) {
	ts := &Set{BaseDir: baseDir}
	if len(bytes.TrimSpace(data)) == 0 {
		return ts, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		var wrapper struct {
			Tools *[]json.RawMessage `json:"tools"`
		}
		if err2 := json.Unmarshal(data, &wrapper); err2 != nil || wrapper.Tools == nil {
			return nil, errors.New("want a JSON array of tools or an object with a \"tools\" array")
		}
		entries = *wrapper.Tools
	}
	for i, entry := range entries {
		t, err := parseTool(entry)
		if err != nil {
			return nil, fmt.Errorf("tool %d: %w", i, err)
		}
		ts.Tools = append(ts.Tools, t)
	}
	return ts, nil
}

func parseTool(entry json.RawMessage) (*Tool, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(entry, &fields); err != nil || fields == nil {
		return &Tool{Raw: entry}, nil // served verbatim, never callable
	}
	if inner, ok := fields["tool"]; ok {
		if _, named := fields["name"]; !named {
			return parseTool(inner) // a fixture entry {"id","expect","tool"}
		}
	}
	t := &Tool{Fields: fields}
	if raw, ok := fields["name"]; ok {
		_ = json.Unmarshal(raw, &t.Name) // a non-string name stays uncallable
	}
	if raw, ok := fields["x-test"]; ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t.Test); err != nil {
			return nil, fmt.Errorf("%q x-test: %w", t.Name, err)
		}
		if err := t.Test.validate(); err != nil {
			return nil, fmt.Errorf("%q x-test: %w", t.Name, err)
		}
		delete(fields, "x-test")
	}
	if raw, ok := fields["secureInputSchema"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		t.Secure = parseSecureSchema(raw)
	}
	var err error
	if t.Raw, err = json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("re-encoding %q: %w", t.Name, err)
	}
	return t, nil
}

// viewWithoutExtension is one tool as served to a client that did not negotiate the
// extension, or nil when the tool must be omitted (SEP-3221 backward
// compatibility 3: tools with required secure parameters are not listed).
func (t *Tool) viewWithoutExtension() json.RawMessage {
	if t.Secure == nil {
		return t.Raw
	}
	if t.Secure.requiresValues() {
		return nil
	}
	fields := make(map[string]json.RawMessage, len(t.Fields))
	for k, v := range t.Fields {
		if k != "secureInputSchema" {
			fields[k] = v
		}
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	return out
}

// Visible is what a client sees in tools/list.
func (ts *Set) Visible(negotiated, toolbox bool) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(ts.Tools))
	for _, t := range ts.Tools {
		if toolbox && !negotiated && t.Secure != nil {
			continue // Toolbox filters them out
		}
		if negotiated {
			out = append(out, t.Raw)
		} else if v := t.viewWithoutExtension(); v != nil {
			out = append(out, v)
		}
	}
	return out
}

// Cursors are opaque to clients; they carry the tool-set generation so a
// cursor from before a list change is rejected rather than silently skewed.
func encodeCursor(generation uint64, offset int) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "g%d:o%d", generation, offset))
}

func decodeCursor(cursor string, generation uint64) (int, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, errors.New("cursor is not ours")
	}
	gen, off, ok := strings.Cut(string(raw), ":")
	if !ok || !strings.HasPrefix(gen, "g") || !strings.HasPrefix(off, "o") {
		return 0, errors.New("cursor is not ours")
	}
	g, err1 := strconv.ParseUint(gen[1:], 10, 64)
	o, err2 := strconv.Atoi(off[1:])
	if err1 != nil || err2 != nil || o < 0 {
		return 0, errors.New("cursor is not ours")
	}
	if g != generation {
		return 0, errors.New("cursor is stale: the tool list changed")
	}
	return o, nil
}

// Page slices the visible tools for a cursor; pageNumber is 1-based.
func Page(tools []json.RawMessage, pageSize int, cursor string, generation uint64) (items []json.RawMessage, next string, pageNumber int, err error) {
	if pageSize <= 0 {
		if cursor != "" {
			return nil, "", 0, errors.New("cursor given but the list is not paginated")
		}
		return tools, "", 1, nil
	}
	offset := 0
	if cursor != "" {
		if offset, err = decodeCursor(cursor, generation); err != nil {
			return nil, "", 0, err
		}
		if offset > len(tools) {
			return nil, "", 0, errors.New("cursor is past the end of the list")
		}
	}
	end := min(offset+pageSize, len(tools))
	if end < len(tools) {
		next = encodeCursor(generation, end)
	}
	return tools[offset:end], next, offset/pageSize + 1, nil
}
