// Package oauth is the client side of the MCP authorization spec for
// remote (streamable HTTP and SSE) MCP servers: OAuth 2.1 with PKCE.
//
// It owns the protocol and nothing else: discovery of the protected
// resource's metadata (RFC 9728) from a 401's WWW-Authenticate header or
// the well-known URIs, the authorization server's metadata (RFC 8414, then
// OpenID discovery, then the 2025-03-26 fallbacks), client identity (a
// pre-registered client, a Client ID Metadata Document, dynamic client
// registration), the authorization code grant with PKCE S256, the resource
// indicator (RFC 8707) and the iss check (RFC 9207), scope selection and
// step-up on 403 insufficient_scope, token endpoint authentication
// (client_secret_basic, client_secret_post, none, private_key_jwt), refresh
// with rotation, the client credentials grant, enterprise-managed
// authorization (id-jag), workload identity federation (jwt-bearer: an
// assertion from the workload's platform), and DPoP (RFC 9449): tokens
// bound to a key pair of the subject's, made for the grant and kept with
// the token, with a fresh proof on every token and resource request and
// the servers' nonces honoured.
//
// Tokens are credentials. They are kept per (subject, resource, issuer)
// behind the TokenStore interface, with the DPoP private key they are
// bound to, so sessions of different subjects never share one, nor a key;
// a Token never prints its secrets (String, GoString, Format and
// LogValue redact them), and errors of this package never carry them.
//
// A Client serves one resource (one MCP server URL). Its Transport wraps an
// http.RoundTripper: it adds the subject's bearer token to each request
// (the subject comes from the request's context, see WithSubject), refreshes
// it, and turns a 401 or an insufficient_scope 403 into either a new token
// (refresh, client credentials), an interactive login through a hook, or an
// *AuthorizationRequiredError. Login runs the authorization code grant on a
// loopback redirect (for a CLI); CallbackHandler completes it for a backend
// that mounts the redirect on its own HTTP server.
//
// Every request of the package's own HTTP client follows the one redirect
// policy of internal/httpredirect (docs/config.md, "Redirects"), and a
// token is refreshed only at the authorization server that issued it.
//
// Its parts with one job each live below it in internal packages, which
// never import it: internal/jose (client assertions, DPoP keys, proofs and
// nonces), internal/wwwauth (parsing WWW-Authenticate), internal/wellknown
// (where metadata may be, which resource covers a server, which URLs a
// document may name) and internal/tokenwire (the token requests' wire
// details and the redaction of their errors).
//
// Besides those, the package imports no other agenthost package but the
// leaves internal/atomicfile and internal/filelock, which write and lock
// the token file, and internal/httpredirect.
package oauth
