package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"iter"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/serve/internal/auth"
	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/agenthost/agenthost/host/serve/internal/sharedstore"
	"github.com/agenthost/agenthost/host/serve/internal/sse"
)

// Shared mode: every replica serves every session (docs/config.md,
// "serve.replica"). A session is a record in PostgreSQL (internal/sharedstore),
// its conversation is the durable engine's, its turns are durable
// workflows, and its latest turn's events are rows any replica replays and
// follows. No replica holds a session between requests: each turn (and
// each tools listing) re-creates the host session from the record, with
// the session values the request carries or, with a sealing key, the
// values sealed in the record. A turn left by a replica that stopped is
// taken up by the engine (the same executor restarting, or a survivor
// once the executor's lease expired) and resumed here by takeUp.

// Shared puts a Server in the shared mode.
type Shared struct {
	// Pool is the PostgreSQL pool of the host's durable engine
	// (durable.Engine.Pool); the host must run turns durably
	// (host.Options.Durability) and keep approvals in the same shared
	// store (approvals.store).
	Pool *pgxpool.Pool
	// SealKey, when set (32 bytes, ParseSealKey), seals each session's
	// values into its record with AES-256-GCM: any replica opens them to
	// resume or run the session's turns, and no request needs to carry
	// them again. Nil: session values are never stored, and a turn of a
	// session created with values needs them in its request.
	SealKey []byte
	// Forget, when set, removes what the durable engine keeps of a deleted
	// session: its conversation and its turns (durable.Engine.DeleteSession;
	// an unfinished turn is cancelled and never resumes). Its error for a
	// session the engine holds nothing of is ignored (errors.Is with
	// ForgetUnknown).
	Forget func(ctx context.Context, sessionID string) error
	// ForgetUnknown is Forget's error for a session the engine holds
	// nothing of (durable.ErrUnknownSession).
	ForgetUnknown error
}

// ParseSealKey reads a sealing key: 64 hexadecimal digits or the
// standard base64 of 32 bytes (surrounding white space ignored).
func ParseSealKey(text string) ([]byte, error) { return sharedstore.ParseSealKey(text) }

// sharedSession loads the request's session; it answers 404 for a session
// of another owner as for one that does not exist (ok false: an answer
// was written).
func (s *Server) sharedSession(w http.ResponseWriter, r *http.Request) (sharedstore.Record, bool) {
	rec, err := s.db.Load(r.Context(), r.PathValue("sessionId"))
	return rec, s.recordAnswer(w, r, rec, err)
}

// recordAnswer answers a request for a record read (rec, err) that is
// not the caller's, or could not be read; ok true: it is the caller's,
// nothing was written.
func (s *Server) recordAnswer(w http.ResponseWriter, r *http.Request, rec sharedstore.Record, err error) bool {
	switch {
	case errors.Is(err, sharedstore.ErrNoSession):
	case err != nil:
		s.logger.Error("serve: reading a session failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the session store cannot be read")
		return false
	case rec.Owner == auth.IdentityOf(r.Context()).Owner:
		return true
	}
	writeError(w, http.StatusNotFound, "not_found", "no session with this id")
	return false
}

func recordInfo(rec sharedstore.Record) sessionInfo {
	out := sessionInfo{ID: rec.ID, Subject: rec.Subject, TrustLevel: rec.TrustLevel, ValueNames: rec.ValueNames, CreatedAt: rec.Created}
	if out.ValueNames == nil {
		out.ValueNames = []string{}
	}
	if rec.TurnID != "" {
		out.Turn = &turnInfo{ID: rec.TurnID, Running: rec.TurnRunning, Events: eventsPath(rec.ID, rec.TurnID)}
	}
	return out
}

func (s *Server) createSharedSession(w http.ResponseWriter, r *http.Request) {
	req, who, names, ok := s.readCreate(w, r)
	if !ok {
		return
	}
	if s.isClosing() {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the server is shutting down")
		return
	}
	trust := req.TrustLevel
	if trust == 0 {
		trust = s.host.Config().Session.TrustLevel
	}
	if trust == 0 {
		trust = 1
	}
	id := s.newSessionID()
	rec := sharedstore.Record{ID: id, Owner: who.Owner, Creator: who.Name, Subject: req.Subject, TrustLevel: trust,
		ValueNames: names, Created: time.Now().UTC()}
	if s.sealer != nil && len(req.Values) > 0 {
		sealed, err := s.sealer.Seal(id, req.Values)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "the session values could not be sealed")
			return
		}
		rec.Sealed = sealed
	}
	switch err := s.db.Create(r.Context(), rec, s.lim.maxSessions, s.lim.maxSessionsPerIdentity); {
	case errors.Is(err, sharedstore.ErrTooManyForCreator):
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", "this identity holds serve.maxSessionsPerIdentity sessions; delete some first")
		return
	case errors.Is(err, sharedstore.ErrTooManySessions):
		writeError(w, http.StatusTooManyRequests, "too_many_sessions", "the replicas hold serve.maxSessions sessions; delete some first")
		return
	case err != nil:
		s.logger.Error("serve: storing a session failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the session store cannot be written")
		return
	}
	s.audit.own(id, rec.Owner)
	w.Header().Set("Location", "/v1/sessions/"+id)
	writeJSON(w, http.StatusCreated, recordInfo(rec))
}

func (s *Server) getSharedSession(w http.ResponseWriter, r *http.Request) {
	if rec, ok := s.sharedSession(w, r); ok {
		writeJSON(w, http.StatusOK, recordInfo(rec))
	}
}

// deleteSharedSession deletes the record and the latest turn's events, and
// (Shared.Forget) the conversation and the turns: a turn of the session
// running on this replica is interrupted, and one running on another is
// cancelled by the engine at its next step.
func (s *Server) deleteSharedSession(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.sharedSession(w, r)
	if !ok {
		return
	}
	if err := s.db.Remove(r.Context(), rec.ID); err != nil {
		s.logger.Error("serve: deleting a session failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the session store cannot be written")
		return
	}
	if f := s.forget; f.Forget != nil {
		if err := f.Forget(r.Context(), rec.ID); err != nil && (f.ForgetUnknown == nil || !errors.Is(err, f.ForgetUnknown)) {
			s.logger.Error("serve: deleting a session's conversation failed", "session", rec.ID, "error", err)
		}
	}
	s.mu.Lock()
	t := s.local[rec.ID]
	s.mu.Unlock()
	if t != nil {
		t.cancel()
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionValues are the values a turn of rec runs with: the request's
// (which must name the values the session was created with), else the
// sealed ones. ok false: an answer was written.
func (s *Server) sessionValues(w http.ResponseWriter, rec sharedstore.Record, given map[string]string) (map[string]string, bool) {
	if given != nil {
		if !slices.Equal(slices.Sorted(maps.Keys(given)), rec.ValueNames) {
			writeError(w, http.StatusBadRequest, "invalid_request", "values must name the session's values, no more and no fewer (valueNames)")
			return nil, false
		}
		return given, true
	}
	if len(rec.ValueNames) == 0 {
		return nil, true
	}
	if rec.Sealed != "" && s.sealer != nil {
		values, err := s.sealer.Open(rec.ID, rec.Sealed)
		if err == nil {
			return values, true
		}
		s.logger.Error("serve: a session's sealed values do not open", "session", rec.ID)
	}
	writeError(w, http.StatusConflict, "values_required", "this session's values are not stored: send them again as values (every replica serves the session, and none keeps them)")
	return nil, false
}

// hostSession re-creates rec's host session for one turn (or listing).
func (s *Server) hostSession(rec sharedstore.Record, values map[string]string, by string) (*host.Session, *servedSession) {
	ss := &servedSession{subject: rec.Subject, trust: rec.TrustLevel, valueNames: rec.ValueNames, created: rec.Created,
		owner: rec.Owner, creator: rec.Creator}
	if by != "" {
		ss.turn = &servedTurn{by: by, running: true}
	}
	ss.sess = s.host.NewSession(host.SessionOptions{ID: rec.ID, Subject: rec.Subject, TrustLevel: rec.TrustLevel, Values: values,
		Approver: sessionApprover{base: s.approver, ss: ss}})
	return ss.sess, ss
}

func (s *Server) sharedTools(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.sharedSession(w, r)
	if !ok {
		return
	}
	values := map[string]string(nil)
	if rec.Sealed != "" && s.sealer != nil {
		values, _ = s.sealer.Open(rec.ID, rec.Sealed)
	}
	sess, _ := s.hostSession(rec, values, "")
	defer sess.Close()
	writeJSON(w, http.StatusOK, sess.Report(r.Context(), r.URL.Query().Get("server")))
}

func (s *Server) postSharedTurn(w http.ResponseWriter, r *http.Request) {
	req, bad := parseTurn(w, r)
	by := auth.IdentityOf(r.Context()).Name
	turnID := newServedTurnID()
	var rec sharedstore.Record
	claimed := false
	if bad == nil && !s.isClosing() {
		// One statement reads the record and claims the turn when the
		// request may start it there and then (sharedstore.Claim); when it
		// may not, what it read decides below, as the record Load reads.
		var given []string
		if req.Values != nil {
			given = slices.Sorted(maps.Keys(req.Values))
		}
		var err error
		rec, claimed, err = s.db.Claim(r.Context(), r.PathValue("sessionId"), auth.IdentityOf(r.Context()).Owner, turnID, by, given)
		if !s.recordAnswer(w, r, rec, err) {
			return
		}
	} else {
		var ok bool
		if rec, ok = s.sharedSession(w, r); !ok {
			return
		}
	}
	if bad != nil {
		bad.write(w)
		return
	}
	values, ok := s.sessionValues(w, rec, req.Values)
	if !ok {
		if claimed { // not reached: a claim needs the values it checks here
			s.retryStore(func() error { return s.db.EndTurn(context.Background(), rec.ID, turnID, 0, nil) })
		}
		return
	}
	if !claimed && !s.claimTurn(w, r, rec, turnID, by) {
		return
	}
	opts := s.turnOp
	if req.MaxSteps > 0 {
		opts.MaxSteps = req.MaxSteps
	}
	opts.TraceParent, opts.TraceState = req.traceParent, req.traceState
	opts.Tag = turnID // the served turn a taken-up workflow writes to (takeUp)
	t := s.runShared(rec, turnID, by, values, 1, func(ctx context.Context, sess *host.Session) iter.Seq[host.Event] {
		return sess.Turn(ctx, req.Message, opts)
	})
	w.Header().Set("Location", eventsPath(rec.ID, turnID))
	w.Header().Set("Agenthost-Turn-Id", turnID)
	sw := sse.Start(w, r, http.StatusOK)
	_ = sse.Stream(r.Context(), sw, t.log, 0, s.life.Done(), true)
}

// claimTurn makes turnID the running turn of rec's session, unless the
// server closes or a turn runs there (ok false: an answer was written).
func (s *Server) claimTurn(w http.ResponseWriter, r *http.Request, rec sharedstore.Record, turnID, by string) bool {
	if s.isClosing() {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the server is shutting down")
		return false
	}
	err := s.db.StartTurn(r.Context(), rec.ID, turnID, by)
	if errors.Is(err, sharedstore.ErrTurnRunning) && s.staleTurn(r.Context(), rec.ID) {
		// The record says a turn runs, but the engine has no unfinished
		// turn of the session: its replica stopped between the two.
		if err = s.db.EndTurn(r.Context(), rec.ID, s.recordTurn(r.Context(), rec.ID), 0, nil); err == nil {
			err = s.db.StartTurn(r.Context(), rec.ID, turnID, by)
		}
	}
	switch {
	case errors.Is(err, sharedstore.ErrTurnRunning):
		writeError(w, http.StatusConflict, "turn_running", err.Error())
		return false
	case errors.Is(err, sharedstore.ErrNoSession):
		writeError(w, http.StatusNotFound, "not_found", "no session with this id")
		return false
	case err != nil:
		s.logger.Error("serve: starting a turn failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the session store cannot be written")
		return false
	}
	return true
}

// staleTurn reports whether the session has no unfinished durable turn
// and none running here.
func (s *Server) staleTurn(ctx context.Context, sessionID string) bool {
	s.mu.Lock()
	_, here := s.local[sessionID]
	s.mu.Unlock()
	if here {
		return false
	}
	ids, err := s.host.UnfinishedTurns(ctx, sessionID)
	return err == nil && len(ids) == 0
}

func (s *Server) recordTurn(ctx context.Context, sessionID string) string {
	rec, err := s.db.Load(ctx, sessionID)
	if err != nil {
		return ""
	}
	return rec.TurnID
}

func newServedTurnID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "turn_" + hex.EncodeToString(b[:])
}

// runShared runs a turn of rec on this replica (a new one, or one taken up
// with run calling Resume): its events are numbered from first, kept in a
// local log for the stream of the request that started it, and stored
// for every replica's streams by storeEvents. The turn is not ended by
// the server's Close: it stops with the durable engine, unfinished, and
// is taken up again (by this executor restarted, or by a survivor).
func (s *Server) runShared(rec sharedstore.Record, turnID, by string, values map[string]string, first int64,
	run func(context.Context, *host.Session) iter.Seq[host.Event]) *servedTurn {
	sess, ss := s.hostSession(rec, values, by)
	ctx, cancel := context.WithCancel(context.WithoutCancel(s.life))
	t := &servedTurn{id: turnID, log: s.events.NewLogFrom(first), cancel: cancel, running: true, by: by}
	ss.turn = t
	s.mu.Lock()
	s.local[rec.ID] = t
	s.mu.Unlock()
	produced, stored := make(chan struct{}), make(chan bool, 1)
	go func() { stored <- s.storeEvents(t, first-1, produced) }()
	go func() {
		defer cancel()
		defer sess.Close()
		var frames eventlog.FrameArena
		var end []byte
		id := first - 1
		for e := range run(ctx, sess) {
			id++
			f := frames.Frame(id, eventlog.BoundResult(&e, s.lim.events.MaxResult))
			if e.Type == host.EventSessionEnd {
				end = f // held back until the store has the turn's end
				continue
			}
			t.log.Append(f)
		}
		close(produced)
		// session_end reaches this replica's streams once the store says
		// the turn ended: a client that saw it may start the next turn on
		// any replica at once.
		if <-stored && !s.isClosing() {
			s.retryStore(func() error { return s.db.EndTurn(context.Background(), rec.ID, t.id, id, end) })
		}
		if end != nil {
			t.log.Append(end)
		}
		s.mu.Lock()
		if s.local[rec.ID] == t {
			delete(s.local, rec.ID)
		}
		s.mu.Unlock()
		ss.mu.Lock()
		t.running = false
		ss.mu.Unlock()
		t.log.Finish()
		t.log.Release()
	}()
	return t
}

// storeEvents writes the turn's events to the store as they come, in
// batches, until it has written the last (produced closes after it); true
// then. Once the server is closing it stops writing (false): the turn is
// being left unfinished for the engine to take up again, and what it says
// as it stops is not its end.
func (s *Server) storeEvents(t *servedTurn, after int64, produced <-chan struct{}) bool {
	ctx := context.Background()
	for {
		evs, _, _, changed, gone := t.log.Since(after)
		if gone {
			after = t.log.FirstNumber() - 1
			continue
		}
		if s.isClosing() {
			return false
		}
		if len(evs) > 0 {
			if !s.retryStore(func() error { return s.db.AppendEvents(ctx, t.id, after+1, evs) }) {
				return false
			}
			after += int64(len(evs))
			continue
		}
		select {
		case <-produced:
			if evs, _, _, _, _ := t.log.Since(after); len(evs) > 0 {
				continue // the last ones came with the end
			}
			return true
		default:
		}
		select {
		case <-changed:
		case <-produced:
		case <-s.life.Done():
		}
	}
}

// retryStore runs write until it succeeds or the server closes (false).
func (s *Server) retryStore(write func() error) bool {
	backoff := 50 * time.Millisecond
	for {
		err := write()
		if err == nil {
			return true
		}
		s.logger.Warn("serve: storing a turn's events failed; retrying", "error", err)
		select {
		case <-s.life.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// takeUp resumes on this replica a durable turn the engine runs here with
// no caller: a turn of a replica that stopped (this executor before its
// restart, or another whose lease expired). Its session is re-created
// from its record, with its sealed values (without a sealing key, with
// none: a call whose binding needs one fails as for a session without
// it), and its events continue after the last one stored. A workflow
// whose served turn (its record's Tag, set by postSharedTurn) is no longer
// the session's is finished without a word to the session (finishStray).
func (s *Server) takeUp(workflowID string, tr host.TurnRecord) {
	ctx, cancel := context.WithTimeout(s.life, 30*time.Second)
	defer cancel()
	rec, err := s.db.Load(ctx, tr.SessionID)
	if err != nil {
		s.logger.Warn("serve: a durable turn was taken up, but its session is not stored; it waits", "turn", workflowID, "error", err)
		return
	}
	var values map[string]string
	if len(rec.ValueNames) > 0 {
		if rec.Sealed != "" && s.sealer != nil {
			values, err = s.sealer.Open(rec.ID, rec.Sealed)
		}
		if values == nil {
			s.logger.Warn("serve: a taken-up turn resumes without its session values (they are not sealed, or not with this key)",
				"session", rec.ID, "error", err)
		}
	}
	if tr.Tag != "" && tr.Tag != rec.TurnID {
		s.finishStray(ctx, rec, workflowID, tr.Tag, values)
		return
	}
	turnID := rec.TurnID
	if turnID == "" {
		turnID = newServedTurnID()
	}
	if err := s.db.ResumeTurn(ctx, rec.ID, turnID); err != nil {
		s.logger.Warn("serve: taking up a turn failed", "session", rec.ID, "error", err)
		return
	}
	last, err := s.db.LastSeq(ctx, turnID)
	if err != nil {
		s.logger.Warn("serve: taking up a turn failed", "session", rec.ID, "error", err)
		return
	}
	s.logger.Info("serve: taking up a durable turn left unfinished", "session", rec.ID, "turn", turnID)
	s.runShared(rec, turnID, rec.TurnBy, values, last+1, func(ctx context.Context, sess *host.Session) iter.Seq[host.Event] {
		if tr.Tag != "" {
			return sess.ResumeTurn(ctx, workflowID)
		}
		return sess.Resume(ctx) // a workflow of an earlier version, which names no served turn
	})
}

// finishStray finishes a taken-up workflow whose served turn (servedTurn,
// its record's Tag) is not the one the session's record names: its
// replica stopped after the turn's answer was stored (the turn out of the
// engine's index of unfinished turns) and before the engine recorded its
// outcome, and another turn started in the session meanwhile. The
// workflow is resumed to its end, its completed steps replayed from their
// checkpoints (nothing runs twice), with its events discarded: the
// session's record and the newer turn's events are left as they are.
// It runs within takeUp's bound: a shutdown or the bound leaves the
// workflow unfinished, for the next take-up.
func (s *Server) finishStray(ctx context.Context, rec sharedstore.Record, workflowID, servedTurn string, values map[string]string) {
	sess, _ := s.hostSession(rec, values, "")
	defer sess.Close()
	n, end := 0, host.Event{}
	for e := range sess.ResumeTurn(ctx, workflowID) {
		n, end = n+1, e
	}
	s.logger.Info("serve: a taken-up durable turn belongs to a served turn the session no longer names; it was finished with its events discarded",
		"session", rec.ID, "turn", servedTurn, "sessionTurn", rec.TurnID, "workflow", workflowID, "events", n, "last", end.Type, "reason", end.Reason)
}

// sharedTurnEvents replays the turn's stored events after Last-Event-ID
// (or ?after=N), then follows new ones, wherever the turn runs, until its
// end.
func (s *Server) sharedTurnEvents(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.sharedSession(w, r)
	if !ok {
		return
	}
	turnID := r.PathValue("turnId")
	if rec.TurnID == "" || rec.TurnID != turnID {
		writeError(w, http.StatusNotFound, "not_found", "no such turn in this session (only the latest turn is kept)")
		return
	}
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if _, _, err := s.db.Since(ctx, turnID, after); errors.Is(err, sharedstore.ErrEventsDropped) {
		writeError(w, http.StatusGone, "gone", "events after this id were dropped (a turn keeps its last 10000 events)")
		return
	}
	sw := sse.Start(w, r, http.StatusOK)
	if err := sw.Flush(); err != nil {
		return
	}
	for {
		woken, stop := s.db.Watch(turnID)
		frames, last, err := s.db.Since(ctx, turnID, after)
		if errors.Is(err, sharedstore.ErrEventsDropped) {
			stop()
			_ = sw.Event(0, "error", []byte(`{"type":"error","kind":"internal","error":"events before this point were dropped (a turn keeps its last 10000)"}`))
			return
		}
		if err != nil {
			stop()
			if ctx.Err() == nil {
				_ = sw.Event(0, "error", []byte(`{"type":"error","kind":"unavailable","error":"the turn's events cannot be read"}`))
			}
			return
		}
		for _, f := range frames {
			if err := sw.WriteFrame(f); err != nil {
				stop()
				return
			}
		}
		after = last
		if len(frames) == sharedstore.MaxReplay {
			stop()
			continue
		}
		if len(frames) > 0 {
			if err := sw.Flush(); err != nil {
				stop()
				return
			}
		} else if now, err := s.db.Load(ctx, rec.ID); err != nil || now.TurnID != turnID || !now.TurnRunning {
			// Ended (or gone): what was stored before the end is read.
			stop()
			frames, _, err := s.db.Since(ctx, turnID, after)
			if err == nil {
				for _, f := range frames {
					_ = sw.WriteFrame(f)
				}
			}
			return
		}
		select {
		case <-woken:
		case <-time.After(sharedstore.FollowPoll):
		case <-ctx.Done():
		case <-s.life.Done():
		}
		stop()
		if ctx.Err() != nil || s.life.Err() != nil {
			return
		}
	}
}

// lastEventID is the stream's Last-Event-ID (or ?after=N); ok false: an
// answer was written.
func lastEventID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(last, 10, 64)
	if err != nil || n < 0 || n == math.MaxInt64 { // the next id must exist
		writeError(w, http.StatusBadRequest, "invalid_request", "Last-Event-ID must be an event id of this turn (a number)")
		return 0, false
	}
	return n, true
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}
