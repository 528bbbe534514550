// Package record owns mcptest's recording: every message the server
// received (and, in memory, every one it sent), kept for tests to read and
// wait on, and appended to the record file one JSON line each. The
// writing side (Open, In, Out, Close) is functions, so that the server
// alone records: mcptest re-exports the reading side.
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Directions of a Recorded message.
const (
	DirIn  = "in"
	DirOut = "out"
)

// Recorded is one message as it crossed the wire. Secure values are kept on
// purpose: tests assert what the host sent.
type Recorded struct {
	Time       time.Time         `json:"ts"`
	Dir        string            `json:"dir"`
	Transport  string            `json:"transport"`
	HTTPMethod string            `json:"httpMethod,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	// Message is the raw JSON-RPC message; for input that was not JSON it is
	// that text as a JSON string and Invalid is set.
	Message json.RawMessage `json:"message"`
	Invalid bool            `json:"invalid,omitempty"`
	// Method is the JSON-RPC method; for a sent response, the method of the
	// request it answers.
	Method string `json:"-"`
}

// Decode unmarshals the message into v.
func (r Recorded) Decode(v any) error {
	if err := json.Unmarshal(r.Message, v); err != nil {
		return fmt.Errorf("decoding recorded %s message: %w", r.Method, err)
	}
	return nil
}

// Params returns the top-level fields of the message's params.
func (r Recorded) Params() map[string]json.RawMessage {
	var m struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(r.Message, &m)
	return m.Params
}

// Recording keeps every message in memory and optionally appends them to a
// file, one JSON line each, written with a single write so lines never tear.
type Recording struct {
	mu      sync.Mutex
	entries []Recorded
	changed chan struct{} // closed and replaced on every append
	file    *os.File
	fileOut bool // also write DirOut entries to file
	fileErr error
}

// Open starts a recording; with path, every received message (and with
// recordSent every sent one) is also appended to that file.
func Open(path string, recordSent bool) (*Recording, error) {
	r := &Recording{changed: make(chan struct{}), fileOut: recordSent}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening record file: %w", err)
		}
		r.file = f
	}
	return r, nil
}

func (r *Recording) add(e Recorded) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	close(r.changed)
	r.changed = make(chan struct{})
	if r.file != nil && r.fileErr == nil && (e.Dir == DirIn || r.fileOut) {
		line, err := json.Marshal(e)
		if err == nil {
			_, err = r.file.Write(append(line, '\n'))
		}
		r.fileErr = err // the first failure stops file output; memory goes on
	}
}

// In records a received message (raw nil: an HTTP GET or DELETE); req
// gives an HTTP request's method and headers.
func In(r *Recording, transport string, raw []byte, method string, req *http.Request) {
	e := Recorded{Dir: DirIn, Transport: transport, Method: method}
	switch {
	case raw == nil: // an HTTP GET or DELETE: no JSON-RPC message
		e.Message = json.RawMessage("null")
	case json.Valid(raw):
		e.Message = append(json.RawMessage(nil), raw...)
	default:
		e.Message, _ = json.Marshal(string(raw))
		e.Invalid = true
	}
	if req != nil {
		e.HTTPMethod = req.Method
		e.Headers = make(map[string]string, len(req.Header))
		for k, v := range req.Header {
			e.Headers[k] = strings.Join(v, ", ")
		}
	}
	r.add(e)
}

// Out records a sent message; method is the request's a response answers.
func Out(r *Recording, transport, method string, raw []byte) {
	e := Recorded{Dir: DirOut, Transport: transport, Method: method}
	if json.Valid(raw) {
		e.Message = append(json.RawMessage(nil), raw...)
	} else {
		e.Message, _ = json.Marshal(string(raw))
		e.Invalid = true
	}
	r.add(e)
}

func (r *Recording) filter(dir, method string) []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Recorded
	for _, e := range r.entries {
		if e.Dir == dir && (method == "" || e.Method == method) {
			out = append(out, e)
		}
	}
	return out
}

// Messages returns received messages with that JSON-RPC method ("" for all,
// including responses and HTTP GET/DELETE requests).
func (r *Recording) Messages(method string) []Recorded { return r.filter(DirIn, method) }

// Sent returns sent messages: responses to requests of that method, and
// notifications with that method ("" for all).
func (r *Recording) Sent(method string) []Recorded { return r.filter(DirOut, method) }

// WaitFor blocks until at least n messages with that method were received.
func (r *Recording) WaitFor(ctx context.Context, method string, n int) ([]Recorded, error) {
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if got := r.Messages(method); len(got) >= n {
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return r.Messages(method), fmt.Errorf("waiting for %d %q messages: %w", n, method, ctx.Err())
		}
	}
}

// Reset forgets the in-memory messages (the file is left alone).
func (r *Recording) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = nil
}

// Close closes the record file and reports the first write that failed.
func Close(r *Recording) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return r.fileErr
	}
	err := r.file.Close()
	r.file = nil
	if r.fileErr != nil {
		return fmt.Errorf("writing record file: %w", r.fileErr)
	}
	if err != nil {
		return fmt.Errorf("closing record file: %w", err)
	}
	return nil
}
