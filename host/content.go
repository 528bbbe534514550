package host

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/results"
)

// ContentText renders one result content item as text for the model or a
// terminal: text passes through; images, audio and resources are summarised
// with their MIME type (their bytes are never pasted into the context).
func ContentText(c mcp.Content) string { return results.Text(c) }

// ContentsText renders several content items, joined by sep.
func ContentsText(contents []mcp.Content, sep string) string { return results.Texts(contents, sep) }

// CutResultText cuts the text of a tool result at max bytes, at a character
// boundary, and says after the cut how many bytes were left out and which
// setting (named by setting) bounds it. The text returned does not share
// memory with s when it was cut. max <= 0 means no cap.
func CutResultText(s string, max int64, setting string) string { return results.Cut(s, max, setting) }
