package serve

import (
	"net/http"

	"github.com/agenthost/agenthost/host/serve/internal/auth"
)

// require wraps h so that only callers holding role reach it: 401 without a
// valid credential, 403 without the role.
func (s *Server) require(role string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := s.auth.Authenticate(r)
		if id == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "a valid bearer token or client certificate is required")
			return
		}
		if !id.Has(role) {
			writeError(w, http.StatusForbidden, "forbidden", "the identity "+quote(id.Name)+" does not hold the "+role+" role")
			return
		}
		h(w, r.WithContext(auth.WithIdentity(r.Context(), id)))
	}
}

func quote(s string) string { return `"` + s + `"` }
