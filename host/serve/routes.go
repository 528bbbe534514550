package serve

import (
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/config"
)

// route is one registered operation: the OpenAPI test checks that the
// document and this table list the same (method, path) pairs.
type route struct {
	method, path string
	role         string // "" for routes that need no credential
	h            http.HandlerFunc
}

func (s *Server) routeTable() []route {
	return []route{
		{"GET", "/healthz", "", s.health},
		{"GET", "/readyz", "", s.ready},
		{"GET", "/openapi.yaml", "", s.openapi},
		{"GET", "/approvals", "", s.approvalsPage},

		{"POST", "/v1/sessions", config.RoleAPI, s.mode(s.createSession, s.createSharedSession)},
		{"GET", "/v1/sessions/{sessionId}", config.RoleAPI, s.mode(s.routed(s.getSession), s.getSharedSession)},
		{"DELETE", "/v1/sessions/{sessionId}", config.RoleAPI, s.mode(s.routed(s.deleteSession), s.deleteSharedSession)},
		{"GET", "/v1/sessions/{sessionId}/tools", config.RoleAPI, s.mode(s.routed(s.sessionTools), s.sharedTools)},
		{"POST", "/v1/sessions/{sessionId}/turns", config.RoleAPI, s.mode(s.routed(s.postTurn), s.postSharedTurn)},
		{"GET", "/v1/sessions/{sessionId}/turns/{turnId}/events", config.RoleAPI, s.mode(s.routed(s.turnEvents), s.sharedTurnEvents)},
		{"GET", "/v1/audit", config.RoleAPI, s.auditQuery},

		{"GET", "/v1/approvals", config.RoleApprover, s.listApprovals},
		{"GET", "/v1/approvals/events", config.RoleApprover, s.approvalEvents},
		{"GET", "/v1/approvals/{approvalId}", config.RoleApprover, s.routedApproval(s.getApproval)},
		{"POST", "/v1/approvals/{approvalId}/votes", config.RoleApprover, s.routedApproval(s.vote)},
	}
}

// mode picks a session route's handler: memory's, or shared's in the
// shared mode (Options.Shared).
func (s *Server) mode(memory, shared http.HandlerFunc) http.HandlerFunc {
	if s.db != nil {
		return shared
	}
	return memory
}

func (s *Server) buildRoutes() http.Handler {
	mux := http.NewServeMux()
	s.routes = s.routeTable()
	origins := crossOrigin(s.cfg.PublicURL)
	for _, rt := range s.routes {
		var h http.Handler = rt.h
		if rt.role != "" {
			h = s.require(rt.role, rt.h)
		}
		if rt.method != http.MethodGet {
			// Every state-changing route: no cross-site request reaches it.
			h = s.crossSiteGuard(origins, h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
	}
	// Unknown paths answer JSON like every other error.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such route: "+r.Method+" "+trimPath(r.URL.Path))
	})
	return securityHeaders(mux)
}

func trimPath(p string) string {
	if len(p) > 200 {
		return p[:200]
	}
	return strings.ToValidUTF8(p, "?")
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type readiness struct {
	Status string `json:"status"`
	// Sessions is given to api callers only: the count tells others how
	// full the replica is.
	Sessions *int           `json:"sessions,omitempty"`
	Servers  []serverStatus `json:"servers"`
}

type serverStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// ready is 200 while the server accepts sessions (not shutting down); it
// lists the MCP servers' statuses for operators without failing on them:
// a replica whose MCP server is down still serves sessions that use others.
// The number of sessions is for callers with the api role.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing, n := s.closing, len(s.sessions)
	if s.db != nil {
		n = len(s.local) // the shared mode holds sessions only while their turn runs here
	}
	s.mu.Unlock()
	out := readiness{Status: "ready", Servers: []serverStatus{}}
	if s.auth.Authenticate(r).Has(config.RoleAPI) {
		out.Sessions = &n
	}
	for _, snap := range s.host.Servers() {
		out.Servers = append(out.Servers, serverStatus{Name: snap.Name, Status: string(snap.Status)})
	}
	status := http.StatusOK
	if closing {
		out.Status, status = "shutting_down", http.StatusServiceUnavailable
	}
	writeJSON(w, status, out)
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(openAPIDocument)
}
