package mcptest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/host/mcptest/internal/record"
	"github.com/agenthost/agenthost/host/mcptest/internal/task"
	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// Server serves one tool set to any number of stdio connections and HTTP
// clients. It is safe for concurrent use.
type Server struct {
	opts     Options
	rec      *Recording
	stateKey []byte // keys requestState MACs; random per server

	mu       sync.Mutex
	tools    *toolset.Set
	sessions map[string]*session // legacy HTTP sessions by Mcp-Session-Id
	subs     map[*subscriber]struct{}
	tasks    map[string]*task.Task       // task.go
	asks     wire.Waiters[*wire.Message] // ask.go: requests to clients awaiting answers
	askSeq   atomic.Int64

	requests atomic.Int64
	noiseMu  sync.Mutex

	closed    chan struct{} // Close was called: hanging handlers and streams end
	closeOnce sync.Once
	died      chan struct{} // a die fault fired
	dieOnce   sync.Once
}

// session is the state the legacy handshake establishes: the stdio
// connection's, or one Mcp-Session-Id's.
type session struct {
	id string

	mu         sync.Mutex
	version    string
	extensions map[string]json.RawMessage
	getStreams int         // open legacy GET streams (HTTP)
	subscriber *subscriber // stdio: registered for list_changed at initialize
}

func (s *session) declaredExtensions() map[string]json.RawMessage {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extensions
}

// exchange is one request being handled.
type exchange struct {
	ctx       context.Context
	msg       *wire.Message
	transport string      // "stdio" or "http"
	header    http.Header // HTTP request headers; nil on stdio
	sess      *session    // legacy state; nil for modern requests over HTTP
	modern    bool
	meta      requestMeta
	// send delivers a notification on the stream that carries this request
	// (stdio connection); nil over HTTP.
	send func(wire.Notification) error
	// request delivers a request to the client on that stream (stdio
	// connection, HTTP SSE response: see sse); nil where none can go.
	request func(serverRequest) error
	// sse is the HTTP SSE response request started; the answer goes on it.
	sse *sseStream
	// abandoned closes when the peer can no longer read answers (stdio EOF).
	abandoned <-chan struct{}
}

// reply is what a handler produced; the transport writes it.
type reply struct {
	result    map[string]any
	err       *RPCError
	silent    bool                // cancelled, hung or dead: write nothing
	garbage   []byte              // fault: written instead of a JSON-RPC response
	sessionID string              // HTTP: minted by initialize
	before    []wire.Notification // legacy HTTP: delivered in the same SSE response first
	listen    *listenRequest      // subscriptions/listen: the transport runs the stream
	toolError bool                // produced by tools/call resolution (SEP status table)
}

func errorReply(err *RPCError) reply { return reply{err: err} }

// resultOrNil is the result to encode: nil rather than a nil map, so an
// error response carries no "result".
func (r reply) resultOrNil() any {
	if r.result == nil {
		return nil
	}
	return r.result
}

// New builds a server from opts.
func New(opts Options) (*Server, error) {
	opts.applyDefaults()
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("mcptestserver options: %w", err)
	}
	var tools *toolset.Set
	var err error
	if opts.ToolsFile != "" {
		tools, err = toolset.Load(opts.ToolsFile)
	} else {
		tools, err = toolset.Parse(opts.ToolsJSON, "")
		if err != nil {
			err = fmt.Errorf("tools JSON: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	rec, err := record.Open(opts.RecordFile, opts.RecordSent)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails on supported platforms
	return &Server{
		opts:     opts,
		rec:      rec,
		stateKey: key,
		tools:    tools,
		sessions: map[string]*session{},
		subs:     map[*subscriber]struct{}{},
		closed:   make(chan struct{}),
		died:     make(chan struct{}),
	}, nil
}

// Recording returns what the server received and sent.
func (s *Server) Recording() *Recording { return s.rec }

// Close ends hanging handlers and notification streams and closes the
// record file. Connections are owned by their transports.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return record.Close(s.rec)
}

func (s *Server) currentTools() *toolset.Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *Server) capabilities() map[string]any {
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	if s.taskExtensionServed() {
		// The 2025-11-25 revision's form: task-augmented tools/call.
		caps["tasks"] = map[string]any{"cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	}
	if len(s.opts.Extensions) > 0 || s.taskExtensionServed() {
		exts := map[string]any{}
		if s.taskExtensionServed() {
			exts[TasksExtension] = map[string]any{}
		}
		for _, id := range s.opts.Extensions {
			exts[id] = map[string]any{}
			if s.opts.NullExtensions {
				exts[id] = nil
			}
		}
		caps["extensions"] = exts
	}
	return caps
}

func (s *Server) serverInfo() map[string]any {
	return map[string]any{"name": s.opts.Name, "version": s.opts.Version}
}

// requestMeta is the per-request _meta of the modern era.
type requestMeta struct {
	version    string
	hasCaps    bool
	extensions map[string]json.RawMessage
}

func parseMeta(params json.RawMessage) requestMeta {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var m requestMeta
	if json.Unmarshal(params, &p) != nil || p.Meta == nil {
		return m
	}
	_ = json.Unmarshal(p.Meta[wire.MetaProtocolVersion], &m.version)
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if raw, ok := p.Meta[wire.MetaClientCaps]; ok && json.Unmarshal(raw, &caps) == nil && len(raw) > 0 && raw[0] == '{' {
		m.hasCaps = true
		m.extensions = caps.Extensions
	}
	return m
}

// isModern decides the era of a request the way mcp-go's server does: a
// modern version in _meta or in the Mcp-Protocol-Version header. A server
// that does not accept the modern era treats everything as legacy, like a
// server that predates it.
func (s *Server) isModern(msg *wire.Message, header http.Header) bool {
	if !s.opts.accepts(EraModern) {
		return false
	}
	if wire.IsModern(parseMeta(msg.Params).version) {
		return true
	}
	return header != nil && wire.IsModern(header.Get(wire.HeaderProtocolVersion))
}

// handle answers one request. The transport has recorded it, admitted it
// (die-after) and, for legacy HTTP, resolved its session.
func (s *Server) handle(x *exchange) reply {
	s.noise("handling %s", x.msg.Method)
	if x.modern {
		x.meta = parseMeta(x.msg.Params)
		rep := s.handleModern(x)
		decorateModern(rep.result, s.serverInfo())
		return rep
	}
	return s.handleLegacy(x)
}

func (s *Server) handleModern(x *exchange) reply {
	if err := s.validateModern(x); err != nil {
		return errorReply(err)
	}
	negotiatedHere := toolset.Negotiated(s.opts.Extensions, x.meta.extensions)
	switch x.msg.Method {
	case "server/discover":
		versions := []string{wire.ModernVersion}
		if s.opts.accepts(EraLegacy) {
			versions = append(versions, wire.LegacyVersions...)
		}
		return reply{result: map[string]any{
			"supportedVersions": versions,
			"capabilities":      s.capabilities(),
			"ttlMs":             0,
			"cacheScope":        "private",
		}}
	case "tools/list":
		rep := s.listTools(x, negotiatedHere)
		if rep.result != nil {
			rep.result["ttlMs"] = 0
			rep.result["cacheScope"] = "private"
		}
		return rep
	case "tools/call":
		return s.callTool(x, negotiatedHere)
	case "subscriptions/listen":
		return s.listen(x)
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result":
		return s.handleTask(x)
	default:
		return errorReply(wire.Errorf(CodeMethodNotFound, "Method not found"))
	}
}

// validateModern applies the 2026-07-28 request rules: version in _meta and
// header agreeing, client capabilities present, Mcp-Method and Mcp-Name
// mirroring the body over HTTP.
func (s *Server) validateModern(x *exchange) *RPCError {
	m := x.meta
	if x.header != nil {
		hv := x.header.Get(wire.HeaderProtocolVersion)
		switch {
		case hv == "":
			return wire.Errorf(CodeHeaderMismatch, "%s header is required for requests carrying %s", wire.HeaderProtocolVersion, wire.MetaProtocolVersion)
		case m.version == "":
			return wire.Errorf(CodeInvalidParams, "missing or invalid _meta field %s", wire.MetaProtocolVersion)
		case hv != m.version:
			return wire.Errorf(CodeHeaderMismatch, "%s header %s does not match request %s %s", wire.HeaderProtocolVersion, hv, wire.MetaProtocolVersion, m.version)
		}
	}
	if m.version != wire.ModernVersion {
		supported := []string{wire.ModernVersion}
		return wire.WithData(wire.Errorf(CodeUnsupportedVersion, "unsupported protocol version: %q (supported: %v)", m.version, supported),
			map[string]any{"supported": supported, "requested": m.version})

	}
	if !m.hasCaps {
		return wire.Errorf(CodeInvalidParams, "missing or invalid _meta field %s", wire.MetaClientCaps)
	}
	if x.header == nil {
		return nil
	}
	if got := x.header.Get(wire.HeaderMethod); got != x.msg.Method {
		return wire.Errorf(CodeHeaderMismatch, "%s header %q does not match method %q", wire.HeaderMethod, got, x.msg.Method)
	}
	if x.msg.Method == "tools/call" {
		var p struct {
			Name json.RawMessage `json:"name"`
		}
		_ = json.Unmarshal(x.msg.Params, &p)
		if values := x.header.Values(wire.HeaderName); len(values) == 0 || !wire.HeaderMatches(values[0], p.Name) {
			return wire.Errorf(CodeHeaderMismatch, "%s header does not match params.name", wire.HeaderName)
		}
	}
	if strings.HasPrefix(x.msg.Method, "tasks/") {
		var p struct {
			TaskID json.RawMessage `json:"taskId"`
		}
		_ = json.Unmarshal(x.msg.Params, &p)
		if values := x.header.Values(wire.HeaderName); len(values) == 0 || !wire.HeaderMatches(values[0], p.TaskID) {
			return wire.Errorf(CodeHeaderMismatch, "%s header does not match params.taskId", wire.HeaderName)
		}
	}
	return nil
}

func decorateModern(result map[string]any, serverInfo map[string]any) {
	if result == nil {
		return
	}
	if _, ok := result["resultType"]; !ok {
		result["resultType"] = "complete"
	}
	meta, _ := result["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[wire.MetaServerInfo] = serverInfo
	result["_meta"] = meta
}

func (s *Server) handleLegacy(x *exchange) reply {
	if !s.opts.accepts(EraLegacy) {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(x.msg.Params, &p)
		requested := p.ProtocolVersion
		if requested == "" {
			requested = parseMeta(x.msg.Params).version
		}
		supported := []string{wire.ModernVersion}
		return errorReply(wire.WithData(wire.Errorf(CodeUnsupportedVersion, "unsupported protocol version: %q (supported: %v)", requested, supported),
			map[string]any{"supported": supported, "requested": requested}))
	}
	switch x.msg.Method {
	case "initialize":
		return s.initialize(x)
	case "ping":
		return reply{result: map[string]any{}}
	case "tools/list":
		// Toolbox lists secure tools on 2026-07-28 only.
		return s.listTools(x, !s.opts.Toolbox && toolset.Negotiated(s.opts.Extensions, x.sess.declaredExtensions()))
	case "tools/call":
		return s.callTool(x, toolset.Negotiated(s.opts.Extensions, x.sess.declaredExtensions()))
	case "tasks/get", "tasks/cancel", "tasks/result":
		return s.handleTask(x)
	default:
		return errorReply(wire.Errorf(CodeMethodNotFound, "Method not found"))
	}
}

// legacyNeedsSession lists the legacy methods that run inside a session.
func legacyNeedsSession(method string) bool {
	return slices.Contains([]string{"ping", "tools/list", "tools/call"}, method)
}

func (s *Server) initialize(x *exchange) reply {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	if len(x.msg.Params) > 0 && json.Unmarshal(x.msg.Params, &p) != nil {
		var loose struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(x.msg.Params, &loose) != nil {
			return errorReply(wire.Errorf(CodeInvalidParams, "initialize params must be an object"))
		}
		p.ProtocolVersion = loose.ProtocolVersion // capabilities unreadable: none declared
	}
	version := wire.LatestLegacyVersion
	if slices.Contains(wire.LegacyVersions, p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	rep := reply{result: map[string]any{
		"protocolVersion": version,
		"capabilities":    s.capabilities(),
		"serverInfo":      s.serverInfo(),
	}}
	sess := x.sess
	if x.transport == "http" {
		sess = &session{id: newSessionID()}
		s.mu.Lock()
		s.sessions[sess.id] = sess
		s.mu.Unlock()
		rep.sessionID = sess.id
	}
	sess.mu.Lock()
	sess.version = version
	sess.extensions = p.Capabilities.Extensions
	subscribe := x.send != nil && sess.subscriber == nil
	if subscribe {
		sess.subscriber = &subscriber{send: x.send}
	}
	sess.mu.Unlock()
	if subscribe {
		s.subscribe(sess.subscriber)
	}
	return rep
}

func (s *Server) lookupSession(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (s *Server) endSession(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[id]
	delete(s.sessions, id)
	return ok
}

func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func (s *Server) listTools(x *exchange, negotiatedHere bool) reply {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(x.msg.Params) > 0 && json.Unmarshal(x.msg.Params, &p) != nil {
		return errorReply(wire.Errorf(CodeInvalidParams, "tools/list params must be an object"))
	}
	if s.opts.MalformedList {
		return reply{result: map[string]any{"tools": map[string]any{"not": "an array"}}}
	}
	if n := s.opts.NestedList; n > 0 {
		// Written raw: encoding/json would refuse to encode it.
		deep := `{"jsonrpc":"2.0","id":` + string(x.msg.ID) + `,"result":{"tools":[{"name":"deep","inputSchema":{"type":"object","default":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}}]}}`
		return reply{garbage: []byte(deep)}
	}
	ts := s.currentTools()
	items, next, pageNumber, err := toolset.Page(ts.Visible(negotiatedHere, s.opts.Toolbox), s.opts.PageSize, p.Cursor, ts.Generation)
	if err != nil {
		return errorReply(wire.Errorf(CodeInvalidParams, "Invalid cursor: %v", err))
	}
	if s.opts.MalformedPage == pageNumber {
		if s.opts.MalformedKind == MalformedGarbage {
			return reply{garbage: []byte("this is not JSON {")}
		}
		items = corruptPage(items, s.opts.MalformedKind)
	}
	result := map[string]any{"tools": items}
	if next != "" {
		result["nextCursor"] = next
	}
	return reply{result: result}
}
