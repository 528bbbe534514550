// Package redirecttest is a test kit for the redirect policy
// (internal/httpredirect): loopback HTTP servers that record every request
// they receive, so a test can assert that a credential never reached an
// origin, and a handler that redirects. Production code never imports it.
package redirecttest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is one request a Server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Recorder keeps the requests a server received. Its zero value is ready.
type Recorder struct {
	mu   sync.Mutex
	reqs []Request
}

// Record keeps r, whose body has been read as body.
func (rec *Recorder) Record(r *http.Request, body []byte) {
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	rec.mu.Unlock()
}

// Requests are the requests received so far.
func (rec *Recorder) Requests() []Request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Request(nil), rec.reqs...)
}

// Saw reports whether value reached the server in any request: a header
// (HTTP Basic credentials decoded too) or a body.
func (rec *Recorder) Saw(value string) bool {
	for _, r := range rec.Requests() {
		if bytes.Contains(r.Body, []byte(value)) {
			return true
		}
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, value) {
					return true
				}
			}
			if name == "Authorization" {
				req := &http.Request{Header: http.Header{"Authorization": vs}}
				if id, secret, ok := req.BasicAuth(); ok && (strings.Contains(id, value) || strings.Contains(secret, value)) {
					return true
				}
			}
		}
	}
	return false
}

// Server is an HTTP server on 127.0.0.1 (an origin of its own: its port)
// that records each request, then hands it to its handler.
type Server struct {
	*httptest.Server
	Recorder

	mu      sync.Mutex
	handler http.Handler
}

// New starts a Server serving h (every request answered 404 when nil); it
// is closed when the test ends.
func New(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{handler: h}
	if s.handler == nil {
		s.handler = http.NotFoundHandler()
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Handle replaces the handler.
func (s *Server) Handle(h http.Handler) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.Record(r, body)
	s.mu.Lock()
	h := s.handler
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// Redirect answers every request with status and a Location of target
// followed by the request's path and query.
func Redirect(status int, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.TrimRight(target, "/")+r.URL.RequestURI(), status)
	})
}

// Case is one row of the table each client's redirect test runs: the
// configured origin redirects within itself, or to another origin
// (another port of the same host), through the client agenthost builds
// or one the caller hands in.
type Case struct {
	Name string
	// Elsewhere: the redirect goes to another origin (it must be
	// refused, the other origin receiving nothing).
	Elsewhere bool
	// CallerClient: the caller hands in an HTTP client of its own
	// (nil CheckRedirect, Go's default of following everything).
	CallerClient bool
}

// Cases are the rows every client's redirect test runs.
var Cases = []Case{
	{Name: "same origin"},
	{Name: "another port", Elsewhere: true},
	{Name: "another port, the caller's HTTP client", Elsewhere: true, CallerClient: true},
}
