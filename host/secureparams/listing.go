package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/internal/jsonlex"
)

// ListedTool is one definition split out of a tools/list result by
// SplitToolsPage. Parse it with its Parse method: the page was validated as
// a whole, so the definition is not checked again.
type ListedTool struct {
	Raw   json.RawMessage
	valid bool
}

// Parse is ParseTool for a listed definition. Its Raw becomes Tool.Raw
// without a copy (the page must not change afterwards). schemas, when not
// nil, shares compiled secure schemas with the listing's other tools.
func (l ListedTool) Parse(schemas *SchemaCache) (*Tool, error) {
	var t *Tool
	var err error
	if l.valid {
		t, err = parseValidTool(l.Raw)
	} else {
		t, err = ParseTool(l.Raw)
	}
	if t != nil {
		t.schemas = schemas
	}
	return t, err
}

// ToolsPage is one tools/list result, split.
type ToolsPage struct {
	Tools []ListedTool
	// NextCursor is nil when the result has none (absent or null).
	NextCursor *string
}

// ErrMalformedPage is wrapped by SplitToolsPage when a result is not a JSON
// object, or its "tools" is not an array, or its "nextCursor" is not a
// string.
var ErrMalformedPage = errors.New("malformed tools/list result")

// SplitToolsPage validates a raw tools/list result once and splits it into
// its definitions (each exactly the bytes the server sent) and next cursor,
// as encoding/json would read {"tools": [...], "nextCursor": "..."} (the
// last of repeated members wins), without decoding the definitions.
func SplitToolsPage(page json.RawMessage) (ToolsPage, error) {
	if !jsonlex.Valid(page) {
		return splitToolsPageSlow(page)
	}
	return SplitValidToolsPage(page)
}

// SplitValidToolsPage is SplitToolsPage for a result already known to be
// valid JSON: one that encoding/json decoded as part of its JSON-RPC
// response (every mcp-go transport does), so it is not checked again. The
// definitions are split in the same single pass that reads the result's
// members.
func SplitValidToolsPage(page json.RawMessage) (ToolsPage, error) {
	lx := jsonlex.New(page)
	if kind, _ := lx.Next(); kind != jsonlex.ObjectStart {
		return splitToolsPageSlow(page)
	}
	var out ToolsPage
	var cursor json.RawMessage
	sawTools := false
	for {
		kind, raw := lx.Next()
		if kind != jsonlex.Key {
			break
		}
		key := jsonlex.Unquote(raw)
		if (key != "tools" && strings.EqualFold(key, "tools")) || (key != "nextCursor" && strings.EqualFold(key, "nextCursor")) {
			// encoding/json matches member names without regard to case;
			// such pages are rare enough to read its way.
			return splitToolsPageSlow(page)
		}
		start := lx.ValueStart()
		if key != "tools" {
			lx.SkipValue()
			if key == "nextCursor" {
				cursor = page[start:lx.Pos():lx.Pos()]
			}
			continue
		}
		if start >= len(page) || page[start] != '[' {
			// null or not an array: encoding/json's verdict (null is an
			// empty list; anything else an error).
			return splitToolsPageSlow(page)
		}
		// The last "tools" wins, as with encoding/json.
		sawTools, out.Tools = true, out.Tools[:0]
		lx.Next() // '['
		for {
			item := lx.ValueStart()
			if item >= len(page) || page[item] == ']' {
				lx.Next() // ']'
				break
			}
			lx.SkipValue()
			out.Tools = append(out.Tools, ListedTool{Raw: page[item:lx.Pos():lx.Pos()], valid: true})
		}
	}
	if !sawTools {
		return splitToolsPageSlow(page)
	}
	switch {
	case cursor == nil || string(cursor) == "null":
	case cursor[0] == '"':
		s := jsonlex.Unquote(cursor)
		out.NextCursor = &s
	default:
		return splitToolsPageSlow(page)
	}
	return out, nil
}

// splitToolsPageSlow is the encoding/json reading, for the results the
// fast path does not take (errors, "tools": null).
func splitToolsPageSlow(page json.RawMessage) (ToolsPage, error) {
	var body struct {
		Tools      json.RawMessage `json:"tools"`
		NextCursor *string         `json:"nextCursor"`
	}
	if err := json.Unmarshal(page, &body); err != nil {
		return ToolsPage{}, fmt.Errorf("%w: %w", ErrMalformedPage, err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body.Tools, &items); err != nil {
		return ToolsPage{}, fmt.Errorf("%w: \"tools\" is not an array: %w", ErrMalformedPage, err)
	}
	out := ToolsPage{NextCursor: body.NextCursor}
	for _, item := range items {
		out.Tools = append(out.Tools, ListedTool{Raw: item})
	}
	return out, nil
}
