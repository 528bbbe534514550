// Package httpredirect owns the redirect policy of every outgoing HTTP
// client of agenthost: MCP servers reached by url, the model endpoint
// (llm.baseURL), webhooks and replica peers of `agenthost serve`, and the
// OAuth client's discovery, registration and token requests
// (docs/config.md, "Redirects").
//
// A redirect is followed only within the origin (scheme, host and port) of
// the request that started the chain, with every header of that request,
// at most MaxHops times; where the client's owner admits URLs (the managed
// policy's allowedServers for an MCP server), every hop must be admitted
// too. Any other redirect is refused before anything is sent to its
// target: the client's Do returns an *Error (errors.Is ErrRefused) naming
// both origins. A cross-origin redirect is not followed with headers
// stripped either: none of these endpoints has a reason to send agenthost
// elsewhere, and a request's body (an MCP call's arguments, a signed
// webhook payload, a model prompt) is as private as its headers.
//
// Every client is built here (NewClient) or passed through here (Apply);
// a test over the module's sources fails on an http.Client built anywhere
// else.
package httpredirect

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxHops bounds the redirects of one request.
const MaxHops = 10

// ErrRefused is matched (errors.Is) by every *Error.
var ErrRefused = errors.New("redirect refused")

// Error is a refused redirect. Its message names origins (and, for a hop
// the owner did not admit, the target's path), never a query or user
// information.
type Error struct {
	// From is the origin of the request that started the chain; To the
	// redirect target's origin.
	From, To string
	// Reason says why (another origin, too many hops, not admitted).
	Reason string
	// Err is the owner's admission error, when that refused the hop.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("redirect from %s to %s refused: %s", e.From, e.To, e.Reason)
	if e.Err != nil {
		// The admission error says where its rule is documented.
		return msg + ": " + e.Err.Error()
	}
	return msg + ` (docs/config.md, "Redirects")`
}

// Is matches ErrRefused.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// Unwrap is the admission error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Policy is the redirect policy of one client.
type Policy struct {
	// Admit, when set, is asked about every redirect target that passed
	// the origin check; an error refuses the hop. The MCP connection of a
	// server under a managed policy sets it to the allowedServers check.
	Admit func(*url.URL) error
}

// CheckRedirect is the policy as an http.Client's CheckRedirect: req is
// the next hop, via the requests made so far, oldest first.
func (p Policy) CheckRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	switch {
	case len(via) > MaxHops:
		return &Error{From: Origin(first), To: Origin(req.URL), Reason: fmt.Sprintf("more than %d redirects", MaxHops)}
	case !SameOrigin(first, req.URL):
		return &Error{From: Origin(first), To: Origin(req.URL),
			Reason: "redirects are followed within the origin (scheme, host and port) of the request only"}
	case p.Admit != nil:
		if err := p.Admit(req.URL); err != nil {
			// The origin only: a path may carry a token, as a query may.
			return &Error{From: Origin(first), To: Origin(req.URL), Reason: "the target's path is not admitted", Err: err}
		}
	}
	return nil
}

// NewClient returns a client over rt (http.DefaultTransport when nil)
// that follows p.
func NewClient(rt http.RoundTripper, p Policy) *http.Client {
	return &http.Client{Transport: rt, CheckRedirect: p.CheckRedirect}
}

// Apply returns a copy of c (a new client when nil) that follows p. A
// CheckRedirect c has of its own is asked after p, about the hops p
// allows.
func Apply(c *http.Client, p Policy) *http.Client {
	if c == nil {
		return NewClient(nil, p)
	}
	out := *c
	own := c.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := p.CheckRedirect(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		return nil
	}
	return &out
}

// Origin is u's origin: lower-case scheme and host, and the port (the
// scheme's default port when u names none), as "scheme://host:port".
func Origin(u *url.URL) string {
	if u == nil {
		return ""
	}
	return strings.ToLower(u.Scheme) + "://" + hostPort(u)
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (a port left out is the scheme's default).
func SameOrigin(a, b *url.URL) bool {
	return a != nil && b != nil && strings.EqualFold(a.Scheme, b.Scheme) && hostPort(a) == hostPort(b)
}

func hostPort(u *url.URL) string {
	h, p := u.Hostname(), u.Port()
	if p == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			p = "443"
		case "http":
			p = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(h), p)
}
