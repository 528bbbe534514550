package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// maxBody bounds a request body; a real host never sends more.
const maxBody = 32 << 20

// Server plays a Script. It is safe for concurrent use; requests take steps
// in arrival order.
type Server struct {
	script     Script
	scriptErr  error
	apiKey     string
	record     io.Writer
	log        io.Writer
	chunkRunes int

	stopOnce sync.Once
	stopped  chan struct{} // closed by Close; releases delays and hangs

	mu       sync.Mutex
	next     int // next script step
	requests Recording
	failures []string
}

// Option configures a Server.
type Option func(*Server)

// WithAPIKey makes the server require "Authorization: Bearer KEY".
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKey = key } }

// WithRecordWriter appends every request to w as one JSON line (see
// ReadRecording). The server does not close w.
func WithRecordWriter(w io.Writer) Option { return func(s *Server) { s.record = w } }

// WithFailureLog writes each failure to w as it happens, for debugging
// tests that run the binary.
func WithFailureLog(w io.Writer) Option { return func(s *Server) { s.log = w } }

// WithChunkRunes sets how many runes of text or arguments go in one
// streamed delta (default 4).
func WithChunkRunes(n int) Option {
	return func(s *Server) {
		if n > 0 {
			s.chunkRunes = n
		}
	}
}

// New returns a server that plays script. An invalid script (see
// Script.Validate) makes every request fail with 500 and a recorded failure;
// Start fails the test at once instead.
func New(script Script, opts ...Option) *Server {
	s := &Server{
		script:     script,
		scriptErr:  script.Validate(),
		chunkRunes: 4,
		stopped:    make(chan struct{}),
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// Start serves the server on a loopback httptest server for the life of the
// test and returns its base URL, ending in /v1, for openai.ClientConfig.
func (s *Server) Start(t testing.TB) string {
	t.Helper()
	if s.scriptErr != nil {
		t.Fatalf("fakellm: %v", s.scriptErr)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close() // releases hanging handlers so ts.Close does not wait on them
		ts.Close()
	})
	return ts.URL + "/v1"
}

// Close releases every delayed or hanging handler; later delays and hangs
// end at once. It does not stop a listener.
func (s *Server) Close() { s.stopOnce.Do(func() { close(s.stopped) }) }

// Handler returns the HTTP handler serving the chat-completions endpoint.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Failures returns every check and expectation that failed so far, plus
// server-side problems such as an exhausted script.
func (s *Server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.failures...)
}

// AssertNoFailures reports each recorded failure as a test error.
func (s *Server) AssertNoFailures(t testing.TB) {
	t.Helper()
	for _, f := range s.Failures() {
		t.Errorf("fakellm: %s", f)
	}
}

// Recorded returns a copy of every request received so far.
func (s *Server) Recorded() Recording {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(Recording(nil), s.requests...)
}

// Requests returns the raw body of every request received so far.
func (s *Server) Requests() []json.RawMessage { return s.Recorded().Bodies() }

// ToolsOf returns the raw tools array of request i; see Recording.ToolsOf.
func (s *Server) ToolsOf(i int) json.RawMessage { return s.Recorded().ToolsOf(i) }

// MessagesOf returns the messages of request i; see Recording.MessagesOf.
func (s *Server) MessagesOf(i int) []Message { return s.Recorded().MessagesOf(i) }

// AllText returns everything the host sent; see Recording.AllText.
func (s *Server) AllText() string { return s.Recorded().AllText() }

// exchange is one request being answered.
type exchange struct {
	index    int
	step     int // -1 when no step answers
	req      chatRequest
	body     []byte
	failures []string
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	x := &exchange{step: -1, body: body}
	status, reason := s.gatekeep(r, body, readErr, &x.req)

	var step Step
	s.mu.Lock()
	x.index = len(s.requests)
	if status != 0 {
		x.failures = []string{reason}
	} else {
		step, status, reason = s.takeStepLocked(x)
	}
	s.recordLocked(r, x)
	s.mu.Unlock()

	if status != 0 {
		writeError(w, status, "", errorBody(status, reason))
		return
	}
	s.answer(w, r, x, step)
}

// gatekeep rejects, with an HTTP status and a reason, what never reaches the
// model; otherwise it decodes the body into req.
func (s *Server) gatekeep(r *http.Request, body []byte, readErr error, req *chatRequest) (int, string) {
	auth := r.Header.Get("Authorization")
	switch {
	case r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions":
		return http.StatusNotFound, fmt.Sprintf("unknown path %s", r.URL.Path)
	case r.Method != http.MethodPost:
		return http.StatusMethodNotAllowed, fmt.Sprintf("method %s, want POST", r.Method)
	case readErr != nil:
		return http.StatusBadRequest, fmt.Sprintf("reading body: %v", readErr)
	case len(body) > maxBody:
		return http.StatusRequestEntityTooLarge, "body larger than 32 MiB"
	case s.apiKey != "" && auth == "":
		return http.StatusUnauthorized, "no Authorization header, but an API key is configured"
	case s.apiKey != "" && auth != "Bearer "+s.apiKey:
		return http.StatusUnauthorized, "the Authorization header does not carry the configured API key as a Bearer token"
	}
	if err := json.Unmarshal(body, req); err != nil {
		return http.StatusBadRequest, fmt.Sprintf("body is not a chat-completions request: %v", err)
	}
	return 0, ""
}

// takeStepLocked checks x, takes the next step for it and collects x's
// failures. A non-zero status means answer with that error instead of the
// step. s.mu is held.
func (s *Server) takeStepLocked(x *exchange) (Step, int, string) {
	if s.scriptErr != nil {
		x.failures = []string{s.scriptErr.Error()}
		return Step{}, http.StatusInternalServerError, s.scriptErr.Error()
	}
	x.failures = checkWire(x.req)
	if s.next >= len(s.script) {
		x.failures = append(x.failures, fmt.Sprintf("script exhausted (%d steps)", len(s.script)))
		return Step{Text: "script exhausted"}, 0, ""
	}
	x.step = s.next
	step := s.script[s.next]
	s.next++
	failed := checkExpect(step.Expect, x.req, x.body)
	x.failures = append(x.failures, failed...)
	if len(failed) > 0 {
		return step, http.StatusInternalServerError, "failed expectations: " + strings.Join(failed, "; ")
	}
	return step, 0, ""
}

// recordLocked keeps the request and its failures and appends them to the
// record writer. s.mu is held.
func (s *Server) recordLocked(r *http.Request, x *exchange) {
	rawBody := json.RawMessage(x.body)
	if !json.Valid(x.body) {
		rawBody, _ = json.Marshal(string(x.body)) // a string always marshals
	}
	for i, f := range x.failures {
		x.failures[i] = fmt.Sprintf("request %d: %s", x.index, f)
	}
	entry := Request{
		Index:    x.index,
		Step:     x.step,
		Method:   r.Method,
		Path:     r.URL.Path,
		Header:   redactedHeader(r.Header),
		Body:     rawBody,
		Failures: x.failures,
	}
	s.requests = append(s.requests, entry)
	s.failLocked(x.failures...)
	if s.record == nil {
		return
	}
	line, err := json.Marshal(entry)
	if err == nil {
		_, err = s.record.Write(append(line, '\n'))
	}
	if err != nil {
		s.failLocked(fmt.Sprintf("request %d: writing the record: %v", x.index, err))
	}
}

func (s *Server) failLocked(failures ...string) {
	s.failures = append(s.failures, failures...)
	if s.log != nil {
		for _, f := range failures {
			fmt.Fprintf(s.log, "fakellm: FAILURE: %s\n", f)
		}
	}
}
