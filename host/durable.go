package host

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/host/internal/durableturn"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mask"
	turnpkg "github.com/agenthost/agenthost/host/internal/turn"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/failpoint"
	"github.com/agenthost/agenthost/llmview"
)

// Durability runs turns as durable workflows on an engine with a database
// (package host/durable/dbosdurable: DBOS Transact on PostgreSQL or
// SQLite). It is the one seam between the host and the engine: the host
// never links an engine, and a host without one (Options.Durability nil)
// runs turns in memory as it always did. docs/durable.md says what is
// stored, what is not, and what a resuming caller sends.
type Durability = durableturn.Durability

// DurableTurnFunc runs one durable turn: steps is the turn's checkpoint
// log, rec what the turn was started with.
type DurableTurnFunc = durableturn.TurnFunc

// TurnRecord is what a durable turn is started with, stored by the engine:
// never a session value or a secure value.
type TurnRecord = durableturn.TurnRecord

// Steps is a durable turn's checkpoint log, handed to DurableTurnFunc.
type Steps = durableturn.Steps

// TaskSteps is a Steps that also keeps the MCP task a call's server
// answered it with, so that a resumed turn follows that task.
type TaskSteps = durableturn.TaskSteps

// StepFunc is one step's work; its output is what is checkpointed.
type StepFunc = durableturn.StepFunc

// StepOutcome is a Go step's output.
type StepOutcome = durableturn.StepOutcome

// IdempotencyKeyMeta is the key in a tools/call request's params._meta
// that carries the call's idempotency key on durable turns.
const IdempotencyKeyMeta = durableturn.IdempotencyKeyMeta

// ErrUnfinishedTurn is returned (as a turn's error event) when a turn is
// started on a durable session whose earlier turn has not finished: resume
// that one first (Session.Resume).
var ErrUnfinishedTurn = durableturn.ErrUnfinishedTurn

// ErrMaybeRan: a durable call was sent, and its result lost, before the
// process stopped; it was not sent again.
var ErrMaybeRan = durableturn.ErrMaybeRan

// durableCall is a tool call's part in a durable turn: its idempotency
// key and the turn's ledger of sends (durableturn.ToolCall).
type durableCall = durableturn.ToolCall

// detached reports a durable call's context ended because the engine
// stops (the turn is left unfinished, to be resumed), not because its
// caller went (an interrupted turn, recorded as finished).
func detached(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), approvals.ErrDetached)
}

// requestID is the approval request id a durable call asks under
// (durableturn.RequestID).
func requestID(key, args, pinHash, policyRev string) string {
	return durableturn.RequestID(key, args, pinHash, policyRev)
}

// idempotentByTrust reports whether the tool is idempotent by a source the
// operator trusts: a read or observe classified by the operator's
// catalogue, or an idempotentHint from a server whose annotations are
// trusted (trustAnnotations). A durable call of such a tool whose result
// was lost is sent again (once, with the same idempotency key); any other
// is reported as possibly run.
func (h *Host) idempotentByTrust(server string, ct *CatalogTool) bool {
	eff := h.effective(server, ct)
	if eff.Source.Category == risk.SourceCatalogue &&
		(eff.Category == risk.CategoryRead || eff.Category == risk.CategoryObserve) {
		return true
	}
	if !h.trusted(server) {
		return false
	}
	return risk.DeclaresIdempotent(ct.Tool.Annotations)
}

// attachments are this process's durable turns that have a caller.
type attachments = durableturn.Attachments[*turn]

// OnUnattachedTurn sets fn, called in a goroutine of its own for every
// durable turn the engine runs in this process while no caller here waits
// for it: a turn taken up after a restart of this executor, or one of
// another executor that this process took over (a lease that expired, or
// the engine's queue handing a recovered turn to this process). fn
// typically re-creates the session (its id, subject, trust level and
// session values) and calls Session.Resume, which lets the turn go on.
// Turns the engine ran before fn was set are handed to it at once. A host
// that never sets it leaves such turns waiting for Resume, as before.
func (h *Host) OnUnattachedTurn(fn func(turnID string, rec TurnRecord)) {
	h.attached.SetHandler(fn)
}

// runDurableTurn is the host's DurableTurnFunc: it finds the turn's caller
// (waiting for one for a recovered turn), and runs the turn with its
// steps checkpointed.
func (h *Host) runDurableTurn(wctx context.Context, steps Steps, rec TurnRecord) error {
	h.attached.Unattached(steps.TurnID(), rec)
	att, err := h.attached.Wait(wctx, steps.TurnID())
	if err != nil {
		return err
	}
	defer att.RunEnded()
	t := att.Turn
	if t.s.id != rec.SessionID {
		return fmt.Errorf("durable turn %s belongs to session %s, not %s", steps.TurnID(), rec.SessionID, t.s.id)
	}
	ctx, stop := durableturn.RunContext(wctx, att.Ctx, approvals.ErrDetached)
	defer stop()
	t.cp, t.engine = steps, wctx
	if rec.MaxSteps > 0 || rec.MaxRepeatedFailures > 0 {
		t.opts.MaxSteps, t.opts.MaxRepeatedFailures = rec.MaxSteps, rec.MaxRepeatedFailures
	}
	t.run(ctx, rec.Prompt)
	if wctx.Err() != nil {
		return context.Cause(wctx) // not finished: the engine keeps it pending
	}
	return nil
}

// durableTurn runs a turn of a durable session through the engine, and
// forwards its events to yield from this goroutine (the iterator's).
func (s *Session) durableTurn(ctx context.Context, t *turn, id string, rec *TurnRecord) {
	h := s.host
	relay := turnpkg.NewRelay[Event]()
	emit := t.Emit
	t.Emit = relay.Send
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	att := durableturn.NewAttachment(t, ctx)
	h.attached.Attach(id, att)
	defer h.attached.Detach(id)
	var runErr error
	relay.Run(emit, func() {
		// The relay closes only once no run of the turn can emit any
		// more: a send after would panic, and the turn would be used by
		// two goroutines.
		if rec != nil {
			runErr = h.durable.RunTurn(context.WithoutCancel(ctx), id, *rec)
		} else {
			runErr = h.durable.AwaitTurn(context.WithoutCancel(ctx), id)
		}
		if h.attached.Release(id, att) {
			<-att.Ran()
		}
	})
	if runErr != nil && !t.Ended {
		t.Emit = emit
		t.Fail(KindInternal, fmt.Errorf("durable turn %s: %w", id, runErr))
	}
}

// Resume takes up the session's unfinished durable turns (left by a
// process that stopped while they ran or waited for approval), oldest
// first, and delivers their events from where each is now: steps that
// completed before are replayed from their checkpoints, not run again,
// and an approval given meanwhile lets its call run. The session must be
// re-created with the same id, subject and trust level, and with its
// session values (they are never stored). On a host without Durability,
// or with no unfinished turn, it delivers nothing.
func (s *Session) Resume(ctx context.Context) iter.Seq[Event] { return s.resume(ctx, "") }

// ResumeTurn is Resume for the session's unfinished durable turn id
// alone (the id OnUnattachedTurn names): it delivers nothing for a turn
// that is not the session's or has finished.
func (s *Session) ResumeTurn(ctx context.Context, id string) iter.Seq[Event] {
	return s.resume(ctx, id)
}

// resume delivers the events of the session's unfinished durable turns,
// or of turn only alone when it is one of them ("": all of them).
func (s *Session) resume(ctx context.Context, only string) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		h := s.host
		if h.durable == nil {
			return
		}
		s.turnMu.Lock()
		defer s.turnMu.Unlock()
		ids, err := h.durable.PendingTurns(ctx, s.id)
		if err != nil {
			yield(Event{Type: EventError, SessionID: s.id, Kind: KindInternal, Error: h.redactor.Redact(err.Error())})
			return
		}
		if only != "" {
			if !slices.Contains(ids, only) {
				return
			}
			ids = []string{only}
		}
		for _, id := range ids {
			stopped := false
			s.turnEvents(ctx, TurnOptions{}, yield, &stopped, func(ctx context.Context, t *turn) {
				s.durableTurn(ctx, t, id, nil)
			})
			if stopped {
				return
			}
		}
	}
}

// Durable reports whether the host runs turns durably.
func (h *Host) Durable() bool { return h.durable != nil }

// startDurableTurn runs a new turn of the session durably.
func (s *Session) startDurableTurn(ctx context.Context, t *turn, prompt string) {
	h := s.host
	if s.transcript.Seq == nil {
		// A replay appends again what the interrupted run appended: only
		// a History that appends at positions keeps one copy.
		t.Fail(KindConfig, errors.New("durable turns need the session's History to append at positions (host.SequencedHistory); "+
			"leave SessionOptions.History nil to keep the conversation in the durable store"))
		return
	}
	if !s.transcript.Loaded {
		// A session re-created with its id: an unfinished turn comes first.
		ids, err := h.durable.PendingTurns(ctx, s.id)
		if err != nil {
			t.Fail(KindInternal, fmt.Errorf("durable turns: %w", err))
			return
		}
		if len(ids) > 0 {
			t.Fail(KindConfig, fmt.Errorf("%w (turn %s)", ErrUnfinishedTurn, ids[0]))
			return
		}
	}
	rec := TurnRecord{SessionID: s.id, Subject: s.subject, TrustLevel: s.trustLevel, Prompt: prompt,
		MaxSteps: t.opts.MaxSteps, MaxRepeatedFailures: t.opts.MaxRepeatedFailures, Tag: t.opts.Tag}
	s.durableTurn(ctx, t, newTurnID(s.id), &rec)
}

// newTurnID is a new durable turn's id (durableturn.NewTurnID).
func newTurnID(sessionID string) string {
	return durableturn.NewTurnID(sessionID, time.Now().UnixNano(), newID()[:8])
}

// TurnSession returns the session a durable turn id belongs to (the
// session id newTurnID began it with), and false for a string that is not
// a turn id. An engine lists a session's turns by the prefix "SESSION."
// and keeps those whose TurnSession is the session: the prefix also
// matches the turns of a session whose own id begins with it.
func TurnSession(turnID string) (string, bool) { return durableturn.TurnSession(turnID) }

// errEngineStopped refuses a durable turn's append once the engine
// stopped: what the turn did after that was not checkpointed, and the
// conversation must hold only what the replay will find again.
var errEngineStopped = errors.New("the durable engine stopped; the turn resumes later")

// Append adds messages to the conversation (see errEngineStopped).
func (t *turn) Append(ctx context.Context, msgs ...model.Message) error {
	if t.engine != nil && t.engine.Err() != nil {
		return errEngineStopped
	}
	return t.s.transcript.Append(ctx, t.s.id, msgs...)
}

// Load loads the session's conversation before the turn's first
// request. A durable turn checkpoints its length then: a replay loads the
// conversation and takes that many messages (what the interrupted run
// appended after comes again from the replay).
func (t *turn) Load(ctx context.Context) error {
	if t.cp == nil {
		return t.s.transcript.Load(ctx, t.s.id)
	}
	return durableturn.Load(ctx, t.cp, &t.s.transcript, t.s.id)
}

// modelStep asks the model as a checkpointed step, or replays its answer.
func (t *turn) modelStep(ctx context.Context, view *llmview.View) (durableturn.ModelAnswer, bool, error) {
	s, h := t.s, t.s.host
	ans, ran, err := durableturn.Ask(ctx, t.cp, func(ctx context.Context) durableturn.ModelAnswer {
		msg, err := t.generate(ctx, &model.Request{Model: h.modelName, Messages: s.requestMessages(), Tools: view.Tools()})
		switch {
		case err != nil && ctx.Err() != nil:
			return durableturn.ModelAnswer{Interrupted: true}
		case err != nil:
			return durableturn.ModelAnswer{Error: h.redactor.Redact(fmt.Sprintf("model: %v", err))}
		}
		msg = turnpkg.Settle(msg, newCallID)
		return durableturn.Answered(msg, mask.Message(h.redactor, msg), t.Last, t.Finish, h.redactor.ContainsSecret)
	})
	if err == nil && !ran {
		t.Usage.Add(ans.Usage)
		t.Finish, t.Last = ans.Finish, ans.Usage
	}
	return ans, ran, err
}

// durableStage records a durable call's send before it leaves. A call
// recorded as sent before (by a run that stopped before its result was
// checkpointed) is sent again only when the tool is idempotent by a
// trusted source, and only once; otherwise it is not sent, the model is
// told it may or may not have run, and the audit result says "unknown".
// A call sent goes with its idempotency key, and follows the task an
// earlier run created.
type durableStage struct{ next stage }

func (st durableStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if dc := c.info.durable; dc != nil {
		failpoint.Hit(failpoint.DurableAfterDecision)
		prior, task, taskErr, err := dc.Ledger(ctx)
		if err := c.s.resend(c, dc, prior, err, task, taskErr); err != nil {
			return nil, err
		}
		failpoint.Hit(failpoint.DurableAfterLedger)
		c.meta = durableturn.Meta(dc.Key)
	}
	return st.next.serve(ctx, c)
}

// resend is the durable stage's decision, on the ledger's word: prior
// sends of the call (or the error recording this one), and the task an
// earlier send created (TaskSteps). nil sends the call; an error is the
// call's outcome, with what its audit record says set on c.
func (s *Session) resend(c *call, dc *durableCall, prior int, sentErr error, task string, taskErr error) error {
	h := s.host
	server, tool := c.server, c.tool
	if taskErr != nil && sentErr == nil && prior > 0 {
		h.logger.Warn("the task of a durable call could not be read", "err", taskErr)
	}
	switch durableturn.Decide(prior, sentErr, task, taskErr, func() bool { return h.idempotentByTrust(server, c.ct) }) {
	case durableturn.NotRecorded:
		c.resultKind = auditlog.ResultNotExecuted
		return hosterr.New(KindInternal, hosterr.MsgOperatorFailure, sentErr, "%s/%s: the send could not be recorded, so the call was not sent: %v", server, tool, sentErr)
	case durableturn.Send:
		return nil
	case durableturn.FollowTask:
		// The call created a task before the process stopped: the task
		// runs on (or ran) on the server, follow it.
		h.logger.Info("following the task a durable call created before the process stopped", "server", server, "tool", tool, "session", s.id)
		dc.Task = task
		return nil
	case durableturn.SendAgain:
		h.logger.Info("re-sending a durable call whose result was lost (the tool is idempotent)", "server", server, "tool", tool, "session", s.id)
		return nil
	}
	h.logger.Warn("a durable call was sent before the process stopped and its result was lost; not sent again (the tool is not idempotent by a trusted source)",
		"server", server, "tool", tool, "session", s.id)
	c.resultKind = auditlog.ResultUnknown
	return hosterr.New(KindToolError, hosterr.MsgMaybeRan, ErrMaybeRan, "%s/%s: %v", server, tool, ErrMaybeRan)
}

// UnfinishedTurns returns the ids of the session's durable turns that have
// not finished, wherever they run (none on a host without Durability).
func (h *Host) UnfinishedTurns(ctx context.Context, sessionID string) ([]string, error) {
	if h.durable == nil {
		return nil, nil
	}
	return h.durable.PendingTurns(ctx, sessionID)
}
