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
	if out, ok := splitCheckingToolsPage(page); ok {
		return out, nil
	}
	return splitToolsPageSlow(page)
}

// splitCheckingToolsPage is SplitValidToolsPage for a page not known to be
// valid: one pass that checks every byte as json.Valid would
// (jsonlex.ValidEnd, the page's own structure here) while it splits. It
// reports false for an invalid page and for every page SplitValidToolsPage
// would leave to the encoding/json reading; splitToolsPageSlow then
// answers, with encoding/json's error for an invalid one.
func splitCheckingToolsPage(page []byte) (ToolsPage, bool) {
	i := jsonlex.SkipSpace(page, 0)
	if i >= len(page) || page[i] != '{' {
		return ToolsPage{}, false
	}
	var out ToolsPage
	var cursor []byte
	sawTools := false
	i = jsonlex.SkipSpace(page, i+1)
	if i < len(page) && page[i] == '}' {
		return ToolsPage{}, false // no "tools"
	}
	for {
		if i >= len(page) || page[i] != '"' {
			return ToolsPage{}, false
		}
		end := jsonlex.ValidEnd(page, i, 1)
		if end < 0 {
			return ToolsPage{}, false
		}
		key := jsonlex.Unquote(page[i:end])
		if (key != "tools" && strings.EqualFold(key, "tools")) || (key != "nextCursor" && strings.EqualFold(key, "nextCursor")) {
			return ToolsPage{}, false // see SplitValidToolsPage
		}
		if i = jsonlex.SkipSpace(page, end); i >= len(page) || page[i] != ':' {
			return ToolsPage{}, false
		}
		i = jsonlex.SkipSpace(page, i+1)
		if key == "tools" {
			if i >= len(page) || page[i] != '[' {
				return ToolsPage{}, false
			}
			sawTools, out.Tools = true, out.Tools[:0]
			if i = jsonlex.SkipSpace(page, i+1); i < len(page) && page[i] == ']' {
				i++
			} else {
				for {
					end := jsonlex.ValidEnd(page, i, 2)
					if end < 0 {
						return ToolsPage{}, false
					}
					out.Tools = append(out.Tools, ListedTool{Raw: page[i:end:end], valid: true})
					if i = jsonlex.SkipSpace(page, end); i < len(page) && page[i] == ',' {
						i = jsonlex.SkipSpace(page, i+1)
						continue
					}
					if i >= len(page) || page[i] != ']' {
						return ToolsPage{}, false
					}
					i++
					break
				}
			}
		} else {
			end := jsonlex.ValidEnd(page, i, 1)
			if end < 0 {
				return ToolsPage{}, false
			}
			if key == "nextCursor" {
				cursor = page[i:end:end]
			}
			i = end
		}
		if i = jsonlex.SkipSpace(page, i); i < len(page) && page[i] == ',' {
			i = jsonlex.SkipSpace(page, i+1)
			continue
		}
		if i >= len(page) || page[i] != '}' {
			return ToolsPage{}, false
		}
		break
	}
	if jsonlex.SkipSpace(page, i+1) != len(page) || !sawTools || !out.setCursor(cursor) {
		return ToolsPage{}, false
	}
	return out, true
}

// setCursor sets NextCursor from the raw value of "nextCursor" (nil when
// absent), and reports false for a value that is neither a string nor null.
func (out *ToolsPage) setCursor(cursor []byte) bool {
	switch {
	case cursor == nil || string(cursor) == "null":
	case cursor[0] == '"':
		s := jsonlex.Unquote(cursor)
		out.NextCursor = &s
	default:
		return false
	}
	return true
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
	if !sawTools || !out.setCursor(cursor) {
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
