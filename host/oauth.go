package host

import (
	"context"
	"net/http"

	"github.com/agenthost/agenthost/host/internal/hosterr"
)

// Authorizer authorizes the requests of servers reached by url (the MCP
// authorization flow), each session's with the token of its subject
// (SessionOptions.Subject). compose.New builds one from the config's
// servers with package host/oauth; a host without one sends their
// requests as they are.
type Authorizer interface {
	// Transport wraps the round tripper of a server's HTTP requests; nil
	// when the server uses no authorization. A request whose subject must
	// (re)authorize fails with an error whose chain holds an
	// *AuthorizationFailure.
	Transport(server string) func(base http.RoundTripper) http.RoundTripper
	// WithSubject returns ctx for the requests of a session of subject.
	WithSubject(ctx context.Context, subject string) context.Context
	// Callback completes the logins started for end users
	// (Host.OAuthCallback).
	Callback(done func(server, subject string, err error)) http.Handler
}

// AuthorizationFailure is the failed authorization of one request: it
// concerns the request's subject only (hosterr.AuthorizationFailure).
type AuthorizationFailure = hosterr.AuthorizationFailure

// Authorizer is the host's Options.Authorizer (nil: none).
func (h *Host) Authorizer() Authorizer { return h.auth }

// OAuthCallback is the handler completing the logins started for every
// server's end users (the redirect URI of the Authorizer routes to it): it
// finds the authorization by its state. done, when not nil, is told the
// server, the subject and the outcome of each completed redirect.
func (h *Host) OAuthCallback(done func(server, subject string, err error)) http.Handler {
	if h.auth == nil {
		return http.HandlerFunc(unknownAuthorization)
	}
	return h.auth.Callback(done)
}

// unknownAuthorization answers a redirect that completes no pending
// authorization.
func unknownAuthorization(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "unknown or expired authorization", http.StatusBadRequest)
}
