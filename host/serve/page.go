package serve

import (
	"bytes"
	_ "embed"
	"net/http"
)

//go:embed approvals.html
var approvalsHTML []byte

// csrfPlaceholder is where approvals.html takes the page's CSRF token.
var csrfPlaceholder = []byte("{{csrf}}")

// approvalsPage serves the approvals page. The page itself holds no data:
// it reads /v1/approvals with the approver's token (kept in the tab's
// sessionStorage, never in a cookie, so other sites cannot vote through
// it) or with the browser's client certificate. It carries the CSRF token
// (issueCSRF) that its votes send back in the Agenthost-CSRF-Token
// header, which every state-changing request from a browser or by client
// certificate needs (crossSiteGuard).
func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	tok := issueCSRF(w, r)
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	_, _ = w.Write(bytes.Replace(approvalsHTML, csrfPlaceholder, []byte(tok), 1))
}
