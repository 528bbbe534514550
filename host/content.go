package host

import (
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// ContentText renders one result content item as text for the model or a
// terminal: text passes through; images, audio and resources are summarised
// with their MIME type (their bytes are never pasted into the context).
func ContentText(c mcp.Content) string {
	switch v := c.(type) {
	case mcp.TextContent:
		return v.Text
	case *mcp.TextContent:
		return v.Text
	case mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, decodedLen(v.Data))
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, decodedLen(v.Data))
	case mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, decodedLen(v.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, decodedLen(v.Data))
	case mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s (%s) %s]", v.URI, v.MIMEType, v.Name)
	case *mcp.ResourceLink:
		return fmt.Sprintf("[resource link %s (%s) %s]", v.URI, v.MIMEType, v.Name)
	case mcp.EmbeddedResource:
		return embeddedText(v)
	case *mcp.EmbeddedResource:
		return embeddedText(*v)
	default:
		return fmt.Sprintf("[%T content]", c)
	}
}

// ContentsText renders several content items, joined by sep.
func ContentsText(contents []mcp.Content, sep string) string {
	parts := make([]string, 0, len(contents))
	for _, c := range contents {
		parts = append(parts, ContentText(c))
	}
	return strings.Join(parts, sep)
}

func embeddedText(e mcp.EmbeddedResource) string {
	switch r := e.Resource.(type) {
	case mcp.TextResourceContents:
		return fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, r.MIMEType, r.Text)
	case *mcp.TextResourceContents:
		return fmt.Sprintf("[resource %s (%s)]\n%s", r.URI, r.MIMEType, r.Text)
	case mcp.BlobResourceContents:
		return fmt.Sprintf("[resource %s (%s), %d bytes]", r.URI, r.MIMEType, decodedLen(r.Blob))
	case *mcp.BlobResourceContents:
		return fmt.Sprintf("[resource %s (%s), %d bytes]", r.URI, r.MIMEType, decodedLen(r.Blob))
	default:
		return "[resource]"
	}
}

func decodedLen(b64 string) int {
	if n, err := base64.StdEncoding.DecodeString(b64); err == nil {
		return len(n)
	}
	return len(b64)
}

// modelResultText caps the text of a tool result given to the model at max
// bytes (cut at a character boundary) and says, after the cut, how much was
// left out. A result stays in the conversation, sent again with every later
// request of the session; an unbounded one would crowd out the rest of the
// context or make every request fail. max <= 0 means no cap.
func modelResultText(s string, max int64) string {
	return CutResultText(s, max, "limits.maxModelResultBytes")
}

// CutResultText cuts the text of a tool result at max bytes, at a character
// boundary, and says after the cut how many bytes were left out and which
// setting (named by setting) bounds it. The text returned does not share
// memory with s when it was cut. max <= 0 means no cap.
func CutResultText(s string, max int64, setting string) string {
	if max <= 0 || int64(len(s)) <= max {
		return s
	}
	cut := int(max)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[agenthost: the tool result was cut here: %d of its %d bytes were left out (%s is %d)]",
		len(s)-cut, len(s), setting, max)
}
