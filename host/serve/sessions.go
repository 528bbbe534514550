package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/serve/internal/auth"
	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/agenthost/agenthost/host/serve/internal/sharedstore"
	"github.com/agenthost/agenthost/host/serve/internal/sse"
)

// servedSession is one session created through the API.
type servedSession struct {
	sess       *host.Session
	subject    string
	trust      int
	valueNames []string
	created    time.Time
	// owner is whose the session is (identity.owner of its creator):
	// another identity gets 404 for it on every route.
	owner string
	// creator is the name of the identity that created it (also what
	// serve.maxSessionsPerIdentity counts).
	creator string

	mu      sync.Mutex
	turn    *servedTurn // the latest turn (running or ended)
	deleted bool
}

// servedTurn is one turn running in the server, owned by it (not by the
// request that started it): a client that disconnects and reconnects with
// Last-Event-ID loses nothing.
type servedTurn struct {
	id      string
	log     *eventlog.Log
	cancel  context.CancelFunc
	running bool
	// by is the name of the identity that started the turn: its approval
	// requests record it (approvals.Request.RequestedBy), and it cannot
	// approve them.
	by string
}

type createSessionRequest struct {
	Subject    string            `json:"subject"`
	TrustLevel int               `json:"trustLevel"`
	Values     map[string]string `json:"values"`
}

// sessionInfo is the API's view of a session: values by name only.
type sessionInfo struct {
	ID         string    `json:"id"`
	Subject    string    `json:"subject"`
	TrustLevel int       `json:"trustLevel"`
	ValueNames []string  `json:"valueNames"`
	CreatedAt  time.Time `json:"createdAt"`
	Turn       *turnInfo `json:"turn"`
}

type turnInfo struct {
	ID      string `json:"id"`
	Running bool   `json:"running"`
	Events  string `json:"events"`
}

func (s *Server) info(id string, ss *servedSession) sessionInfo {
	out := sessionInfo{ID: id, Subject: ss.subject, TrustLevel: ss.trust, ValueNames: ss.valueNames, CreatedAt: ss.created}
	ss.mu.Lock()
	if t := ss.turn; t != nil {
		out.Turn = &turnInfo{ID: t.id, Running: t.running, Events: eventsPath(id, t.id)}
	}
	ss.mu.Unlock()
	return out
}

func eventsPath(sessionID, turnID string) string {
	return "/v1/sessions/" + sessionID + "/turns/" + turnID + "/events"
}

// newSessionID is the replica id (when set), "-", and a random part: the
// prefix tells any replica where the session lives.
func (s *Server) newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := "ses_" + hex.EncodeToString(b[:])
	if s.cfg.Replica.ID != "" {
		id = s.cfg.Replica.ID + "-" + id
	}
	return id
}

// readCreate reads and checks a create-session request: the subject is
// the caller's own name unless it names one the caller may act for.
// names are the values' names, sorted. ok false: an answer was written.
func (s *Server) readCreate(w http.ResponseWriter, r *http.Request) (req createSessionRequest, who *auth.Identity, names []string, ok bool) {
	if !readJSON(w, r, &req) {
		return req, nil, nil, false
	}
	if req.TrustLevel != 0 && !risk.ValidTrustLevel(req.TrustLevel) {
		writeError(w, http.StatusBadRequest, "invalid_request", "trustLevel must be between 1 and 5")
		return req, nil, nil, false
	}
	who = auth.IdentityOf(r.Context())
	if strings.TrimSpace(req.Subject) == "" {
		req.Subject = who.Name // a session acts for its caller unless it names someone it may act for
	}
	switch ok, err := who.MayActFor(req.Subject); {
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", "subject is not a valid id (it holds an invisible, default-ignorable or otherwise refused character)")
		return req, nil, nil, false
	case !ok:
		writeError(w, http.StatusForbidden, "forbidden_subject", "the identity "+quote(who.Name)+" may not act for this subject (serve.identities[].subjects lists the subjects an identity may use besides its own name)")
		return req, nil, nil, false
	}
	names = make([]string, 0, len(req.Values))
	for k := range req.Values {
		names = append(names, k)
	}
	slices.Sort(names)
	return req, who, names, true
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	req, who, names, ok := s.readCreate(w, r)
	if !ok {
		return
	}
	creator := who.Name
	id := s.newSessionID()
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the server is shutting down")
		return
	case s.creators[creator] >= s.lim.maxSessionsPerIdentity:
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", "this identity holds serve.maxSessionsPerIdentity sessions on this replica; delete some first")
		return
	case len(s.sessions) >= s.lim.maxSessions:
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", "this replica holds serve.maxSessions sessions; delete some first")
		return
	}
	ss := &servedSession{subject: req.Subject, valueNames: names, created: time.Now().UTC(), owner: who.Owner, creator: who.Name}
	ss.sess = s.host.NewSession(host.SessionOptions{ID: id, Subject: req.Subject, TrustLevel: req.TrustLevel, Values: req.Values,
		Approver: sessionApprover{base: s.approver, ss: ss}})
	ss.trust = ss.sess.TrustLevel()
	s.sessions[id] = ss
	s.creators[creator]++
	s.mu.Unlock()
	s.audit.own(id, ss.owner)
	w.Header().Set("Location", "/v1/sessions/"+id)
	writeJSON(w, http.StatusCreated, s.info(id, ss))
}

// session finds the request's session; it answers 404 for a session of
// another owner as for one that does not exist.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (string, *servedSession) {
	id := r.PathValue("sessionId")
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil || ss.owner != auth.IdentityOf(r.Context()).Owner {
		writeError(w, http.StatusNotFound, "not_found", "no session with this id")
		return "", nil
	}
	return id, ss
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if id, ss := s.session(w, r); ss != nil {
		writeJSON(w, http.StatusOK, s.info(id, ss))
	}
}

// deleteSession cancels a running turn (its stream ends with session_end
// "interrupted") and closes the session.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id, ss := s.session(w, r)
	if ss == nil {
		return
	}
	s.mu.Lock()
	if s.sessions[id] == ss {
		delete(s.sessions, id)
		if s.creators[ss.creator]--; s.creators[ss.creator] == 0 {
			delete(s.creators, ss.creator)
		}
	}
	s.mu.Unlock()
	ss.mu.Lock()
	ss.deleted = true
	if ss.turn != nil {
		if ss.turn.running {
			ss.turn.cancel()
		}
		ss.turn.log.Release()
	}
	ss.mu.Unlock()
	ss.sess.Close()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sessionTools(w http.ResponseWriter, r *http.Request) {
	_, ss := s.session(w, r)
	if ss == nil {
		return
	}
	writeJSON(w, http.StatusOK, ss.sess.Report(r.Context(), r.URL.Query().Get("server")))
}

type turnRequest struct {
	Message  string `json:"message"`
	MaxSteps int    `json:"maxSteps"`
	// Values are the session's values again, for a turn of a session whose
	// values no replica keeps (the shared mode without a sealing key).
	Values map[string]string `json:"values"`
	// traceParent and traceState are the request's W3C trace context
	// headers: the turn's trace continues it (with telemetry on).
	traceParent, traceState string
}

// postTurn starts a turn and streams its events as they happen. The turn
// belongs to the server: when this request ends early the turn goes on,
// and GET .../turns/{turnId}/events resumes the stream.
func (s *Server) postTurn(w http.ResponseWriter, r *http.Request) {
	sid, ss := s.session(w, r)
	if ss == nil {
		return
	}
	req, ok := s.readTurn(w, r)
	if !ok {
		return
	}
	if req.Values != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "values are given when the session is created (a turn carries them only in the shared mode, docs/config.md serve.replica)")
		return
	}
	t, err := s.startTurn(ss, req, auth.IdentityOf(r.Context()).Name)
	if err != nil {
		writeError(w, http.StatusConflict, "turn_running", err.Error())
		return
	}
	w.Header().Set("Location", eventsPath(sid, t.id))
	w.Header().Set("Agenthost-Turn-Id", t.id)
	sw := sse.Start(w, r, http.StatusOK)
	_ = sse.Stream(r.Context(), sw, t.log, 0, s.life.Done(), true)
}

// readTurn reads and checks a turn request; ok false: an answer was
// written.
func (s *Server) readTurn(w http.ResponseWriter, r *http.Request) (req turnRequest, ok bool) {
	req, p := parseTurn(w, r)
	if p != nil {
		p.write(w)
		return req, false
	}
	return req, true
}

// parseTurn is readTurn, its error answer returned unwritten.
func parseTurn(w http.ResponseWriter, r *http.Request) (req turnRequest, p *problem) {
	if p := decodeJSON(w, r, &req); p != nil {
		return req, p
	}
	req.traceParent, req.traceState = r.Header.Get("traceparent"), r.Header.Get("tracestate")
	if strings.TrimSpace(req.Message) == "" {
		return req, &problem{http.StatusBadRequest, "invalid_request", "message must not be empty"}
	}
	if req.MaxSteps < 0 || req.MaxSteps > 1000 {
		return req, &problem{http.StatusBadRequest, "invalid_request", "maxSteps must be between 1 and 1000 (0 takes the default)"}
	}
	return req, nil
}

func (s *Server) startTurn(ss *servedSession, req turnRequest, by string) (*servedTurn, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.deleted {
		return nil, errors.New("the session was deleted")
	}
	if ss.turn != nil && ss.turn.running {
		return nil, sharedstore.ErrTurnRunning
	}
	ctx, cancel := context.WithCancel(s.life)
	t := &servedTurn{id: newServedTurnID(), log: s.events.NewLog(), cancel: cancel, running: true, by: by}
	if ss.turn != nil {
		ss.turn.log.Release() // only the latest turn is kept
	}
	ss.turn = t
	opts := s.turnOp
	if req.MaxSteps > 0 {
		opts.MaxSteps = req.MaxSteps
	}
	opts.TraceParent, opts.TraceState = req.traceParent, req.traceState
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		var frames eventlog.FrameArena
		id := int64(0)
		for e := range ss.sess.Turn(ctx, req.Message, opts) {
			id++
			t.log.Append(frames.Frame(id, eventlog.BoundResult(&e, s.lim.events.MaxResult)))
		}
		ss.mu.Lock()
		t.running = false
		ss.mu.Unlock()
		t.log.Finish()
	}()
	return t, nil
}

// requestedBy is the identity whose turn is asking: the running turn's
// starter (a session runs one turn at a time), else the session's creator.
func (ss *servedSession) requestedBy() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.turn != nil && ss.turn.running {
		return ss.turn.by
	}
	return ss.creator
}

// turnEvents replays a turn's events after Last-Event-ID (or ?after=N),
// then follows it live until session_end.
func (s *Server) turnEvents(w http.ResponseWriter, r *http.Request) {
	_, ss := s.session(w, r)
	if ss == nil {
		return
	}
	ss.mu.Lock()
	t := ss.turn
	ss.mu.Unlock()
	if t == nil || t.id != r.PathValue("turnId") {
		writeError(w, http.StatusNotFound, "not_found", "no such turn in this session (only the latest turn is kept)")
		return
	}
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	if _, _, _, _, gone := t.log.Since(after); gone {
		writeError(w, http.StatusGone, "gone", "events after this id were dropped (serve.events bounds what a turn keeps)")
		return
	}
	sw := sse.Start(w, r, http.StatusOK)
	_ = sse.Stream(r.Context(), sw, t.log, after, s.life.Done(), false)
}
