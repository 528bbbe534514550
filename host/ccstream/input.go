package ccstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ParseUserMessage reads one line of Claude Code's `--input-format
// stream-json`: {"type":"user","message":{"role":"user","content":...}},
// the content a string or text blocks (joined by newlines). It returns the
// prompt.
func ParseUserMessage(line []byte) (string, error) {
	var m struct {
		Type    string `json:"type"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	if m.Type != "user" || m.Message.Role != "user" {
		return "", fmt.Errorf("want a user message ({\"type\":\"user\",\"message\":{\"role\":\"user\",...}}), got type %q role %q", m.Type, m.Message.Role)
	}
	var text string
	if json.Unmarshal(m.Message.Content, &text) == nil {
		return nonEmpty(text)
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Message.Content, &blocks); err != nil {
		return "", errors.New("message.content is neither a string nor a list of content blocks")
	}
	parts := make([]string, 0, len(blocks))
	for i, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("message.content[%d]: a %q block; only text is taken", i, b.Type)
		}
		parts = append(parts, b.Text)
	}
	return nonEmpty(strings.Join(parts, "\n"))
}

func nonEmpty(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", errors.New("the message has no text")
	}
	return s, nil
}
