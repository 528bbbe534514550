package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Request is one recorded request, as kept in memory and written as one JSON
// line to the record file.
type Request struct {
	Index  int         `json:"index"` // arrival order, from 0
	Step   int         `json:"step"`  // script step that answered it; -1 for none
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Header http.Header `json:"header"`
	// Body is the raw request body; a body that is not JSON is kept as a
	// JSON string so the record stays one valid JSON line.
	Body     json.RawMessage `json:"body"`
	Failures []string        `json:"failures,omitempty"`
}

// Message is one entry of a request's messages array.
type Message struct {
	Role       string            `json:"role"`
	Content    json.RawMessage   `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCalls  []MessageToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
}

// MessageToolCall is a tool call of an assistant message, as the host echoes
// it back in the transcript.
type MessageToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Text is the message content: the string, or the text parts of a
// multi-part content array joined together.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// chatRequest is the part of a chat-completions request body the server
// reads.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      []Message       `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// toolNames lists the function names of a tools payload.
func toolNames(tools json.RawMessage) []string {
	var decoded []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(tools, &decoded) // absent or malformed tools name nothing
	names := make([]string, 0, len(decoded))
	for _, t := range decoded {
		names = append(names, t.Function.Name)
	}
	return names
}

// Recording is a sequence of recorded requests, from Server.Recorded or
// ReadRecording.
type Recording []Request

// ReadRecording reads a record file written with --record or
// WithRecordWriter.
func ReadRecording(path string) (Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening recording: %w", err)
	}
	defer f.Close()
	var rec Recording
	dec := json.NewDecoder(f)
	for {
		var r Request
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return rec, nil
		}
		if err != nil {
			return nil, fmt.Errorf("recording %s, entry %d: %w", path, len(rec), err)
		}
		rec = append(rec, r)
	}
}

// Bodies returns the raw request bodies.
func (rec Recording) Bodies() []json.RawMessage {
	bodies := make([]json.RawMessage, len(rec))
	for i, r := range rec {
		bodies[i] = r.Body
	}
	return bodies
}

// Failures returns every recorded failure, in request order.
func (rec Recording) Failures() []string {
	var all []string
	for _, r := range rec {
		all = append(all, r.Failures...)
	}
	return all
}

// ToolsOf returns the raw tools array of request i, nil when it has none.
// It panics when there is no request i, so a test cannot pass by looking
// at a request that never came.
func (rec Recording) ToolsOf(i int) json.RawMessage {
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(rec.at(i).Body, &body) // non-JSON bodies have no tools
	return body.Tools
}

// MessagesOf returns the decoded messages of request i (nil when the body is
// not a chat request). It panics when there is no request i.
func (rec Recording) MessagesOf(i int) []Message {
	var body chatRequest
	_ = json.Unmarshal(rec.at(i).Body, &body)
	return body.Messages
}

// AllText returns everything the host sent, for canary searches: each raw
// body, each body's decoded strings (so escaped characters match too) and
// the recorded header values.
func (rec Recording) AllText() string {
	var b strings.Builder
	for _, r := range rec {
		b.Write(r.Body)
		b.WriteByte('\n')
		writeStrings(&b, r.Body)
		for name, values := range r.Header {
			b.WriteString(name + ": " + strings.Join(values, ", ") + "\n")
		}
	}
	return b.String()
}

func (rec Recording) at(i int) Request {
	if i < 0 || i >= len(rec) {
		panic(fmt.Sprintf("fakellm: request %d not recorded (have %d)", i, len(rec)))
	}
	return rec[i]
}

// writeStrings writes every string (keys included) of a JSON document, one
// per line.
func writeStrings(b *strings.Builder, doc json.RawMessage) {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				b.WriteString(k + "\n")
				walk(e)
			}
		}
	}
	walk(v)
}

// redactedHeader copies h without credentials.
func redactedHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, name := range []string{"Authorization", "Api-Key"} {
		if out.Get(name) != "" {
			out.Set(name, "[redacted]")
		}
	}
	return out
}
