// Package client owns the client side of mcptest's wire for tests: the
// _meta of a 2026-07-28 request, posting one JSON-RPC message with the
// headers the modern era wants, and reading its answer (JSON or an event
// stream).
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// ModernMeta is the _meta of a 2026-07-28 request declaring the given
// extension ids (none when empty).
func ModernMeta(extensions ...string) map[string]any {
	exts := map[string]any{}
	for _, id := range extensions {
		exts[id] = map[string]any{}
	}
	caps := map[string]any{}
	if len(extensions) > 0 {
		caps["extensions"] = exts
	}
	return map[string]any{
		wire.MetaProtocolVersion: wire.ModernVersion,
		wire.MetaClientCaps:      caps,
		wire.MetaClientInfo:      map[string]any{"name": "mcptestserver-test", "version": "0"},
	}
}

// Response is a decoded JSON-RPC response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *wire.RPCError  `json:"error,omitempty"`
}

// PostResult is the raw answer to PostMessage.
type PostResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// Response decodes the JSON-RPC response in the body; for an SSE body it is
// the last event that carries an id.
func (p *PostResult) Response() (Response, error) {
	var resp Response
	body := p.Body
	if strings.HasPrefix(p.Header.Get("Content-Type"), "text/event-stream") {
		events := SSEData(p.Body)
		body = nil
		for _, e := range events {
			var probe struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(e, &probe) == nil && len(probe.ID) > 0 {
				body = e
			}
		}
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return resp, fmt.Errorf("decoding response (HTTP %d): %w", p.Status, err)
	}
	return resp, nil
}

// SSEData returns the data payloads of an event stream body.
func SSEData(body []byte) []json.RawMessage {
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), wire.MaxBodyBytes)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, json.RawMessage(data))
		}
	}
	return out
}

// PostMessage POSTs one JSON-RPC message. For a modern message (its _meta
// names 2026-07-28) it adds the Mcp-Protocol-Version, Mcp-Method and, for
// tools/call, Mcp-Name headers unless header already sets them.
func PostMessage(ctx context.Context, url string, header http.Header, msg any) (*PostResult, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encoding message: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	var probe struct {
		Method string `json:"method"`
		Params struct {
			Name json.RawMessage            `json:"name"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &probe) == nil {
		var version string
		_ = json.Unmarshal(probe.Params.Meta[wire.MetaProtocolVersion], &version)
		if wire.IsModern(version) {
			setDefault(req.Header, wire.HeaderProtocolVersion, version)
			setDefault(req.Header, wire.HeaderMethod, probe.Method)
			var name string
			if probe.Method == "tools/call" && json.Unmarshal(probe.Params.Name, &name) == nil {
				setDefault(req.Header, wire.HeaderName, name)
			}
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("posting %s: %w", probe.Method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading answer to %s: %w", probe.Method, err)
	}
	return &PostResult{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

func setDefault(h http.Header, key, value string) {
	if _, ok := h[http.CanonicalHeaderKey(key)]; !ok {
		h.Set(key, value)
	}
}
