package mcptest

import (
	"github.com/agenthost/agenthost/host/mcptest/internal/record"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HTTPHandler serves streamable HTTP on Options.Path: POST answers with
// application/json, or text/event-stream for subscriptions/listen and for a
// legacy call that changed the tool list; GET opens a legacy notification
// stream; DELETE ends a legacy session. StartDelay does not apply here.
func (s *Server) HTTPHandler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.dead() {
		panic(http.ErrAbortHandler) // a dead server drops the connection
	}
	if r.URL.Path != s.opts.Path {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.servePost(w, r)
	case http.MethodGet:
		s.serveGet(w, r)
	case http.MethodDelete:
		s.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, wire.MaxBodyBytes+1))
	if err != nil {
		http.Error(w, "reading body failed", http.StatusBadRequest)
		return
	}
	if len(body) > wire.MaxBodyBytes {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	msg, perr := wire.Parse(body)
	method := ""
	if msg != nil {
		method = msg.Method
	}
	record.In(s.rec, "http", body, method, r)
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		http.Error(w, "Invalid content type: must be 'application/json'", http.StatusBadRequest)
		return
	}
	if perr != nil {
		var id json.RawMessage
		if msg != nil {
			id = msg.ID
		}
		s.writeJSON(w, http.StatusBadRequest, method, wire.NewResponse(id, nil, perr))
		return
	}
	if !msg.IsRequest() {
		if msg.Method == "" && msg.HasID() {
			s.answered(msg)
		}
		w.WriteHeader(http.StatusAccepted) // notifications and client responses
		return
	}
	if !s.admit() {
		panic(http.ErrAbortHandler)
	}
	x := &exchange{ctx: r.Context(), msg: msg, transport: "http", header: r.Header, modern: s.isModern(msg, r.Header)}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		// A request to the client goes first on the SSE response, which
		// then carries the answer too.
		x.request = func(req serverRequest) error {
			if x.sse == nil {
				x.sse = startSSE(w, s.rec)
			}
			return x.sse.event(req.Method, req)
		}
	}
	if !x.modern && s.opts.accepts(EraLegacy) && legacyNeedsSession(msg.Method) {
		id := r.Header.Get(wire.HeaderSessionID)
		if id == "" {
			http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
			return
		}
		if x.sess = s.lookupSession(id); x.sess == nil {
			http.Error(w, "Session not found", http.StatusNotFound)
			return
		}
	}
	s.writeReply(w, r, x, s.handle(x))
}

func (s *Server) writeReply(w http.ResponseWriter, r *http.Request, x *exchange, rep reply) {
	if x.sse != nil {
		defer x.sse.stop()
	}
	if rep.silent {
		if s.dead() {
			panic(http.ErrAbortHandler)
		}
		return // cancelled or hung up: the client is gone
	}
	if x.ctx.Err() != nil {
		return
	}
	if x.sse != nil {
		_ = x.sse.event(x.msg.Method, wire.NewResponse(x.msg.ID, rep.resultOrNil(), rep.err))
		return
	}
	if rep.garbage != nil {
		record.Out(s.rec, "http", x.msg.Method, rep.garbage)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(rep.garbage)
		return
	}
	if rep.sessionID != "" {
		w.Header().Set(wire.HeaderSessionID, rep.sessionID)
	}
	if rep.listen != nil {
		stream := startSSE(w, s.rec)
		defer stream.stop()
		if final, ok := s.runListen(x, rep.listen, stream.notify); ok {
			_ = stream.event(x.msg.Method, wire.NewResponse(x.msg.ID, final, nil))
		}
		return
	}
	resp := wire.NewResponse(x.msg.ID, rep.resultOrNil(), rep.err)
	if len(rep.before) > 0 && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		stream := startSSE(w, s.rec)
		defer stream.stop()
		for _, n := range rep.before {
			_ = stream.notify(n)
		}
		_ = stream.event(x.msg.Method, resp)
		return
	}
	s.writeJSON(w, s.httpStatus(x, rep), x.msg.Method, resp)
}

// httpStatus picks the status of a JSON-RPC answer per Options.ErrorStatus.
func (s *Server) httpStatus(x *exchange, rep reply) int {
	if rep.err == nil || s.opts.ErrorStatus == ErrorStatus200 {
		return http.StatusOK
	}
	code := rep.err.Code
	if x.modern {
		switch code {
		case CodeMethodNotFound:
			return http.StatusNotFound
		case CodeHeaderMismatch, CodeMissingCapability, CodeUnsupportedVersion, CodeInvalidRequest, CodeInvalidParams, CodeParseError:
			return http.StatusBadRequest
		}
		return http.StatusOK
	}
	if s.opts.ErrorStatus == ErrorStatusSEP && rep.toolError {
		switch code {
		case CodeMethodNotFound:
			return http.StatusNotFound
		case CodeInvalidParams, CodeMissingCapability:
			return http.StatusBadRequest
		}
	}
	return http.StatusOK
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, method string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response failed", http.StatusInternalServerError)
		return
	}
	record.Out(s.rec, "http", method, body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// serveGet opens the legacy standalone notification stream of a session.
func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	record.In(s.rec, "http", nil, "", r)
	if !s.opts.accepts(EraLegacy) || wire.IsModern(r.Header.Get(wire.HeaderProtocolVersion)) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "GET is not supported in protocol version "+wire.ModernVersion, http.StatusMethodNotAllowed)
		return
	}
	sess, status := s.sessionFromHeader(r)
	if sess == nil {
		http.Error(w, http.StatusText(status), status)
		return
	}
	stream := startSSE(w, s.rec)
	defer stream.stop()
	sub := &subscriber{send: stream.notify}
	sess.mu.Lock()
	sess.getStreams++
	sess.mu.Unlock()
	s.subscribe(sub)
	defer func() {
		s.unsubscribe(sub)
		sess.mu.Lock()
		sess.getStreams--
		sess.mu.Unlock()
	}()
	select {
	case <-r.Context().Done():
	case <-s.closed:
	case <-s.died:
	}
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	record.In(s.rec, "http", nil, "", r)
	if !s.opts.accepts(EraLegacy) || wire.IsModern(r.Header.Get(wire.HeaderProtocolVersion)) {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "DELETE is not supported in protocol version "+wire.ModernVersion, http.StatusMethodNotAllowed)
		return
	}
	sess, status := s.sessionFromHeader(r)
	if sess == nil {
		http.Error(w, http.StatusText(status), status)
		return
	}
	s.endSession(sess.id)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) sessionFromHeader(r *http.Request) (*session, int) {
	id := r.Header.Get(wire.HeaderSessionID)
	if id == "" {
		return nil, http.StatusBadRequest
	}
	if sess := s.lookupSession(id); sess != nil {
		return sess, http.StatusOK
	}
	return nil, http.StatusNotFound
}

// sseStream writes server-sent events; after stop it refuses writes, so a
// broadcast racing the end of the handler never touches a finished response.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	rec     *Recording
	stopped bool
}

func startSSE(w http.ResponseWriter, rec *Recording) *sseStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	return &sseStream{w: w, rc: rc, rec: rec}
}

func (st *sseStream) notify(n wire.Notification) error { return st.event(n.Method, n) }

func (st *sseStream) event(method string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped {
		return errStreamClosed
	}
	record.Out(st.rec, "http", method, data)
	if _, err := fmt.Fprintf(st.w, "event: message\ndata: %s\n\n", data); err != nil {
		return fmt.Errorf("writing event: %w", err)
	}
	return st.rc.Flush()
}

func (st *sseStream) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stopped = true
}

// ListenAndServe listens on Options.Addr, calls ready with the endpoint URL,
// and serves until ctx ends (nil) or the server dies (ErrServerDied), after
// closing the listener and every connection.
func (s *Server) ListenAndServe(ctx context.Context, ready func(url string) error) error {
	if err := s.startDelay(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.opts.Addr, err)
	}
	url := "http://" + ln.Addr().String() + s.opts.Path
	handler := s.HTTPHandler()
	closeAS := func() {}
	if s.opts.OAuth {
		opts := oauthtest.Options{DPoP: s.opts.OAuthDPoP, DPoPNonce: s.opts.OAuthDPoP}
		if s.opts.OAuthAssertion != "" {
			opts.Assertions = map[string]string{s.opts.OAuthAssertion: "e2e-workload"}
		}
		as := oauthtest.New(opts)
		handler, closeAS = as.Protect(func() string { return url }, handler), as.Close
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop := func() {
		_ = srv.Close()
		<-served
		closeAS()
	}
	s.noise("listening on %s", url)
	if ready != nil {
		if err := ready(url); err != nil {
			stop()
			return fmt.Errorf("announcing %s: %w", url, err)
		}
	}
	select {
	case <-ctx.Done():
		stop()
		return nil
	case <-s.died:
		stop()
		return ErrServerDied
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving http: %w", err)
	}
}
