package serve

import (
	_ "embed"
	"net/http"
)

//go:embed approvals.html
var approvalsHTML []byte

// approvalsPage serves the approvals page. The page itself holds no data:
// it reads /v1/approvals with the approver's token (kept in the tab's
// sessionStorage, never in a cookie, so other sites cannot vote through
// it) or with the browser's client certificate.
func (s *Server) approvalsPage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	_, _ = w.Write(approvalsHTML)
}
