package serve

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/approvals"
)

// Bounds of an AuditLog.
const (
	defaultAuditSessions = 10_000
	auditPerSession      = 1_000
)

// AuditLog keeps recent audit records per session, in memory, for GET
// /v1/audit. It is an approvals.Sink: pass it as host.Options.AuditAlso so
// the configured audit file (the record of truth) still gets every record.
// It holds the records of at most maxSessions sessions (the oldest session
// is forgotten first) and the last 1000 records of each.
type AuditLog struct {
	mu          sync.Mutex
	bySession   map[string][]approvals.Record
	order       []string
	maxSessions int
}

// NewAuditLog returns an empty log; maxSessions 0 means 10000.
func NewAuditLog(maxSessions int) *AuditLog {
	if maxSessions <= 0 {
		maxSessions = defaultAuditSessions
	}
	return &AuditLog{bySession: map[string][]approvals.Record{}, maxSessions: maxSessions}
}

// Write keeps a copy of r.
func (a *AuditLog) Write(_ context.Context, r *approvals.Record) error {
	rec := *r
	a.mu.Lock()
	defer a.mu.Unlock()
	list, ok := a.bySession[rec.SessionID]
	if !ok {
		if len(a.order) >= a.maxSessions {
			delete(a.bySession, a.order[0])
			a.order = a.order[1:]
		}
		a.order = append(a.order, rec.SessionID)
	}
	if len(list) >= auditPerSession {
		list = list[1:]
	}
	a.bySession[rec.SessionID] = append(list, rec)
	return nil
}

// Close does nothing.
func (a *AuditLog) Close() error { return nil }

// Session returns the records of one session, oldest first.
func (a *AuditLog) Session(id string) []approvals.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]approvals.Record{}, a.bySession[id]...)
}

type auditAnswer struct {
	Records []approvals.Record `json:"records"`
}

// auditQuery answers GET /v1/audit?sessionId=ID[&limit=N]: the session's
// records, oldest first (the last N with limit).
func (s *Server) auditQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("sessionId")
	if id == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "sessionId is required")
		return
	}
	if s.forwardSession(w, r, id) {
		return
	}
	recs := s.audit.Session(id)
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request", "limit must be a positive integer")
			return
		}
		if n < len(recs) {
			recs = recs[len(recs)-n:]
		}
	}
	writeJSON(w, http.StatusOK, auditAnswer{Records: recs})
}
