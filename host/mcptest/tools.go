package mcptest

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
	"time"
)

// Behaviour is the "x-test" object of a tool definition. It is stripped
// before the tool is served.
type Behaviour struct {
	InputRequired int             `json:"inputRequired,omitempty"`
	IsError       bool            `json:"isError,omitempty"`
	Text          *string         `json:"text,omitempty"`
	EchoSecure    bool            `json:"echoSecure,omitempty"`
	Sleep         string          `json:"sleep,omitempty"`
	Die           bool            `json:"die,omitempty"`
	Hang          bool            `json:"hang,omitempty"`
	ListChanged   string          `json:"listChanged,omitempty"`
	ErrorCode     int             `json:"errorCode,omitempty"`
	ErrorMessage  string          `json:"errorMessage,omitempty"`
	ErrorData     json.RawMessage `json:"errorData,omitempty"`
	Structured    json.RawMessage `json:"structured,omitempty"`
	Content       json.RawMessage `json:"content,omitempty"`
	// Meta is the result's _meta object (trust-annotations labels, say).
	Meta json.RawMessage `json:"meta,omitempty"`
	// Garbage is written in place of the JSON-RPC answer (raw text).
	Garbage string `json:"garbage,omitempty"`
	// Probe runs one of the probes (ProbeDial, ProbeSpawn,
	// ProbeAllocate) with the call's arguments and answers its outcome.
	Probe string `json:"probe,omitempty"`
	// Task runs the call as a task of the Tasks extension (task.go).
	Task *TaskBehaviour `json:"task,omitempty"`
	// Progress are notifications/progress sent, on stdio, for a call that
	// carries a progressToken: spread over Sleep, one at the start of each
	// of len(Progress) equal parts.
	Progress []ProgressStep `json:"progress,omitempty"`

	sleep time.Duration
}

// ProgressStep is one notifications/progress of a Behaviour.
type ProgressStep struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

func (b *Behaviour) validate() error {
	if b.Sleep != "" {
		d, err := time.ParseDuration(b.Sleep)
		if err != nil || d < 0 {
			return fmt.Errorf("sleep %q is not a non-negative duration", b.Sleep)
		}
		b.sleep = d
	}
	if err := b.validateProbe(); err != nil {
		return err
	}
	if b.Task != nil {
		if err := b.Task.validate(); err != nil {
			return err
		}
	}
	if b.InputRequired < 0 {
		return fmt.Errorf("inputRequired must not be negative, got %d", b.InputRequired)
	}
	if len(b.Content) > 0 && !bytes.HasPrefix(bytes.TrimSpace(b.Content), []byte("[")) {
		return errors.New("content must be an array")
	}
	if len(b.Meta) > 0 && !bytes.HasPrefix(bytes.TrimSpace(b.Meta), []byte("{")) {
		return errors.New("meta must be an object")
	}
	return nil
}

// tool is one served entry. Entries need not be valid tools: a file may list
// a non-object or a nameless tool on purpose, and it is served verbatim.
type tool struct {
	name   string
	fields map[string]json.RawMessage // nil when the entry is not an object
	raw    json.RawMessage            // the entry without x-test
	secure *secureSchema              // nil without secureInputSchema
	test   Behaviour
}

// toolSet is an immutable snapshot of the served tools.
type toolSet struct {
	tools      []*tool
	baseDir    string // listChanged paths resolve against it
	generation uint64 // changes with every switch, invalidating cursors
}

func (ts *toolSet) find(name string) *tool {
	for _, t := range ts.tools {
		if t.fields != nil && t.name == name {
			return t
		}
	}
	return nil
}

func loadToolsFile(path string) (*toolSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tools file: %w", err)
	}
	ts, err := parseTools(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("tools file %s: %w", path, err)
	}
	return ts, nil
}

func parseTools(data []byte, baseDir string) (*toolSet, error) {
	ts := &toolSet{baseDir: baseDir}
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
		ts.tools = append(ts.tools, t)
	}
	return ts, nil
}

func parseTool(entry json.RawMessage) (*tool, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(entry, &fields); err != nil || fields == nil {
		return &tool{raw: entry}, nil // served verbatim, never callable
	}
	if inner, ok := fields["tool"]; ok {
		if _, named := fields["name"]; !named {
			return parseTool(inner) // a fixture entry {"id","expect","tool"}
		}
	}
	t := &tool{fields: fields}
	if raw, ok := fields["name"]; ok {
		_ = json.Unmarshal(raw, &t.name) // a non-string name stays uncallable
	}
	if raw, ok := fields["x-test"]; ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t.test); err != nil {
			return nil, fmt.Errorf("%q x-test: %w", t.name, err)
		}
		if err := t.test.validate(); err != nil {
			return nil, fmt.Errorf("%q x-test: %w", t.name, err)
		}
		delete(fields, "x-test")
	}
	if raw, ok := fields["secureInputSchema"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		t.secure = parseSecureSchema(raw)
	}
	var err error
	if t.raw, err = json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("re-encoding %q: %w", t.name, err)
	}
	return t, nil
}

// view is one tool as served to a client that did not negotiate the
// extension, or nil when the tool must be omitted (SEP-3221 backward
// compatibility 3: tools with required secure parameters are not listed).
func (t *tool) viewWithoutExtension() json.RawMessage {
	if t.secure == nil {
		return t.raw
	}
	if t.secure.requiresValues() {
		return nil
	}
	fields := make(map[string]json.RawMessage, len(t.fields))
	for k, v := range t.fields {
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

// visibleTools is what a client sees in tools/list.
func (ts *toolSet) visibleTools(negotiated, toolbox bool) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(ts.tools))
	for _, t := range ts.tools {
		if toolbox && !negotiated && t.secure != nil {
			continue // Toolbox filters them out
		}
		if negotiated {
			out = append(out, t.raw)
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

// page slices the visible tools for a cursor; pageNumber is 1-based.
func page(tools []json.RawMessage, pageSize int, cursor string, generation uint64) (items []json.RawMessage, next string, pageNumber int, err error) {
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
