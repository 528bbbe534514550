package serve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
)

// Cross-site request forgery. A client certificate is a credential the
// browser attaches by itself, to requests any site makes it send, so every
// state-changing route (POST, DELETE) is wrapped by crossSiteGuard, which
// refuses, before authentication:
//
//   - a request a browser marks as cross-origin: Sec-Fetch-Site other than
//     same-origin or none, or, without it, an Origin other than the
//     request's own host or serve.publicURL (http.CrossOriginProtection);
//   - a POST whose Content-Type is not application/json (what an HTML form
//     or a "simple" cross-site fetch can send without a CORS preflight,
//     which this server never grants);
//   - a request authenticated by a client certificate, or sent by a
//     browser (it carries Sec-Fetch-Site or Origin), without the CSRF
//     token: the Agenthost-CSRF-Token header must equal the CSRF cookie
//     that GET /approvals sets (a double-submit token: another site can
//     neither read the cookie nor set the header).
//
// Bearer-token clients that are not browsers send none of the markers and
// need no token: another site cannot make a browser attach the token.
const (
	csrfHeader = "Agenthost-CSRF-Token"
	// csrfCookieTLS is the cookie's name over HTTPS: the __Host- prefix
	// makes browsers refuse it from anyone but this origin, over TLS.
	csrfCookieTLS   = "__Host-agenthost-csrf"
	csrfCookiePlain = "agenthost-csrf"
	csrfTokenBytes  = 32
)

// crossOrigin builds the Sec-Fetch-Site / Origin check; publicURL, when
// set, is an origin browsers may use too (a load balancer's address, which
// the Host of a request a replica forwarded no longer names).
func crossOrigin(publicURL string) *http.CrossOriginProtection {
	c := http.NewCrossOriginProtection()
	if u, err := url.Parse(publicURL); err == nil && u.Scheme != "" && u.Host != "" {
		_ = c.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	return c
}

// crossSiteGuard wraps a state-changing route (see above); origins is
// crossOrigin's check.
func (s *Server) crossSiteGuard(origins *http.CrossOriginProtection, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := origins.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross_origin", "a cross-origin request cannot change anything here")
			return
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be sent as Content-Type: application/json")
				return
			}
		}
		if (s.auth.ByCertificate(r) || fromBrowser(r)) && !validCSRF(r) {
			writeError(w, http.StatusForbidden, "csrf", "this request needs the "+csrfHeader+" header, equal to the CSRF cookie GET /approvals sets")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fromBrowser reports a request a browser sent: browsers add these
// headers themselves, and pages cannot remove them.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Site") != "" || r.Header.Get("Origin") != ""
}

// csrfCookieName is the CSRF cookie's name for r's connection.
func csrfCookieName(r *http.Request) string {
	if r.TLS != nil {
		return csrfCookieTLS
	}
	return csrfCookiePlain
}

// csrfCookie returns the well-formed CSRF token of r's cookie, or "".
func csrfCookie(r *http.Request) string {
	c, err := r.Cookie(csrfCookieName(r))
	if err != nil {
		return ""
	}
	if b, err := base64.RawURLEncoding.DecodeString(c.Value); err != nil || len(b) != csrfTokenBytes {
		return ""
	}
	return c.Value
}

// validCSRF: the header carries the cookie's token.
func validCSRF(r *http.Request) bool {
	tok := csrfCookie(r)
	return tok != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(tok)) == 1
}

// issueCSRF returns the CSRF token of the page r asks for: the cookie's
// when it already holds one (so tabs opened earlier keep working), else a
// new one, set as the cookie (HttpOnly, SameSite=Strict, Secure over TLS).
func issueCSRF(w http.ResponseWriter, r *http.Request) string {
	if tok := csrfCookie(r); tok != "" {
		return tok
	}
	var b [csrfTokenBytes]byte
	_, _ = rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookieName(r), Value: tok, Path: "/", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	return tok
}
