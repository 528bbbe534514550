package serve

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/host/serve/internal/auth"
)

// Bounds of an AuditLog.
const (
	defaultAuditSessions = 10_000
	auditPerSession      = 1_000
)

// AuditLog keeps recent audit records per session, in memory, for GET
// /v1/audit. It is an auditlog.Sink: pass it as host.Options.AuditAlso so
// the configured audit file (the record of truth) still gets every record.
// It holds the records of at most maxSessions sessions (the oldest session
// is forgotten first) and the last 1000 records of each, and whose each
// served session is (its owner), for as long as it holds its records.
type AuditLog struct {
	mu          sync.Mutex
	bySession   map[string][]auditlog.Record
	owners      map[string]string
	order       []string
	maxSessions int
}

// NewAuditLog returns an empty log; maxSessions 0 means 10000.
func NewAuditLog(maxSessions int) *AuditLog {
	if maxSessions <= 0 {
		maxSessions = defaultAuditSessions
	}
	return &AuditLog{bySession: map[string][]auditlog.Record{}, owners: map[string]string{}, maxSessions: maxSessions}
}

// track makes room for session id and remembers it; a.mu is held.
func (a *AuditLog) track(id string) {
	if _, ok := a.bySession[id]; ok {
		return
	}
	if len(a.order) >= a.maxSessions {
		delete(a.bySession, a.order[0])
		delete(a.owners, a.order[0])
		a.order = a.order[1:]
	}
	a.order = append(a.order, id)
	a.bySession[id] = nil
}

// own records whose the session id is, for GET /v1/audit.
func (a *AuditLog) own(id, owner string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.track(id)
	a.owners[id] = owner
}

// Write keeps a copy of r.
func (a *AuditLog) Write(_ context.Context, r *auditlog.Record) error {
	rec := *r
	a.mu.Lock()
	defer a.mu.Unlock()
	a.track(rec.SessionID)
	list := a.bySession[rec.SessionID]
	if len(list) >= auditPerSession {
		list = list[1:]
	}
	a.bySession[rec.SessionID] = append(list, rec)
	return nil
}

// Close does nothing.
func (a *AuditLog) Close() error { return nil }

// Session returns the records of one session, oldest first.
func (a *AuditLog) Session(id string) []auditlog.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditlog.Record{}, a.bySession[id]...)
}

// sessionOf returns the records of session id if it is owner's; false
// for another owner's session and for one it does not know.
func (a *AuditLog) sessionOf(id, owner string) ([]auditlog.Record, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if o, ok := a.owners[id]; !ok || o != owner {
		return nil, false
	}
	return append([]auditlog.Record{}, a.bySession[id]...), true
}

type auditAnswer struct {
	Records []auditlog.Record `json:"records"`
}

// auditQuery answers GET /v1/audit?sessionId=ID[&limit=N]: the session's
// records, oldest first (the last N with limit). A session of another
// owner is answered 404, as one that does not exist.
func (s *Server) auditQuery(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("sessionId")
	if id == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "sessionId is required")
		return
	}
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request", "limit must be a positive integer")
			return
		}
		limit = n
	}
	if s.forwardSession(w, r, id) {
		return
	}
	// A live session's owner is the session's; the log's own note of it
	// is for sessions already deleted (and it forgets the oldest).
	owner := auth.IdentityOf(r.Context()).Owner
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	var recs []auditlog.Record
	ok := false
	if ss == nil && s.db != nil {
		// The shared mode: the stored session's owner (the records are
		// the ones this replica wrote; audit.store has every replica's).
		if rec, err := s.db.Load(r.Context(), id); err == nil {
			ss = &servedSession{owner: rec.Owner}
		}
	}
	if ss != nil {
		if ok = ss.owner == owner; ok {
			recs = s.audit.Session(id)
		}
	} else {
		recs, ok = s.audit.sessionOf(id, owner)
	}
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no session with this id")
		return
	}
	if limit > 0 && limit < len(recs) {
		recs = recs[len(recs)-limit:]
	}
	writeJSON(w, http.StatusOK, auditAnswer{Records: recs})
}
