package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mask"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/failpoint"
	"github.com/agenthost/agenthost/llmview"
)

// Durability runs turns as durable workflows on an engine with a database
// (package host/durable/dbosdurable: DBOS Transact on PostgreSQL or
// SQLite). It is the one seam between the host and the engine: the host
// never links an engine, and a host without one (Options.Durability nil)
// runs turns in memory as it always did.
//
// A durable turn checkpoints each step as it completes: the conversation's
// length when the turn began, each model answer, and each tool call's
// outcome. When the process stops (a crash, SIGKILL, a deploy) the engine
// takes the turn up again and the host replays it from the checkpoints:
// the model is not asked again for an answer it gave, the calls it asked
// for are the ones recorded, and a call that completed is not run again.
// docs/durable.md says what is stored, what is not, and what a resuming
// caller sends.
type Durability interface {
	// Start binds the host's turn function to the engine and starts it;
	// New calls it once. From then on the engine may call run, for a turn
	// started with RunTurn and for each unfinished turn it recovers.
	Start(run DurableTurnFunc) error
	// RunTurn runs the new durable turn id with rec and returns when it
	// has ended (run returned). When a turn with that id exists already,
	// RunTurn waits for it instead.
	RunTurn(ctx context.Context, id string, rec TurnRecord) error
	// PendingTurns returns the ids of the session's unfinished turns,
	// oldest first.
	PendingTurns(ctx context.Context, sessionID string) ([]string, error)
	// AwaitTurn waits until the turn id has ended, wherever it runs.
	AwaitTurn(ctx context.Context, id string) error
	// History is where the durable sessions' conversations are kept
	// (sessions that bring no History of their own use it).
	History() History
}

// DurableTurnFunc runs one durable turn: steps is the turn's checkpoint
// log, rec what the turn was started with.
type DurableTurnFunc func(ctx context.Context, steps Steps, rec TurnRecord) error

// TurnRecord is what a durable turn is started with, stored by the engine:
// never a session value or a secure value.
type TurnRecord struct {
	SessionID  string `json:"sessionId"`
	Subject    string `json:"subject,omitempty"`
	TrustLevel int    `json:"trustLevel"`
	// Prompt is the user's message (what the model is sent).
	Prompt              string `json:"prompt"`
	MaxSteps            int    `json:"maxSteps,omitempty"`
	MaxRepeatedFailures int    `json:"maxRepeatedFailures,omitempty"`
}

// Steps is a durable turn's checkpoint log, handed to DurableTurnFunc. A
// turn calls Step and Go in the same order on every replay; the engine
// matches each call with the checkpoint at its position.
type Steps interface {
	// TurnID is the turn's id.
	TurnID() string
	// Step runs fn as the turn's next step, unless the step completed in an
	// earlier run: then fn is not called and its recorded output is
	// returned. ran reports whether fn ran now.
	Step(ctx context.Context, name string, fn StepFunc) (out json.RawMessage, ran bool, err error)
	// Go starts fn as the turn's next step, concurrently with the caller
	// and other Go steps; the outcome arrives on the channel. A step
	// completed earlier delivers its recorded output without running fn.
	Go(ctx context.Context, name string, fn StepFunc) (<-chan StepOutcome, error)
	// Sent records that the tool call with idempotency key key is about to
	// be sent, and returns how many times it was recorded before (0: the
	// first time). It is called inside a step, before the request leaves.
	Sent(ctx context.Context, key string) (prior int, err error)
}

// TaskSteps is a Steps that also keeps the MCP task a call's server
// answered it with (a server's `tasks: auto`), so that a turn resumed
// after the process stopped follows that task instead of reporting the
// call's result lost. The adapter in host/durable implements it.
type TaskSteps interface {
	Steps
	// SentTask records taskID as the task the call with idempotency key
	// key created; it is called once the server answered with it, before
	// the task is polled.
	SentTask(ctx context.Context, key, taskID string) error
	// TaskOf is the task recorded for key, or "".
	TaskOf(ctx context.Context, key string) (string, error)
}

// StepFunc is one step's work; its output is what is checkpointed.
type StepFunc func(ctx context.Context) (json.RawMessage, error)

// StepOutcome is a Go step's output.
type StepOutcome struct {
	Out json.RawMessage
	Err error
}

// SequencedHistory is a History that appends at a position, idempotently:
// a replayed append of messages already stored at that position changes
// nothing. Durable turns need it (a replay appends again what the
// interrupted run appended); the durable store's History implements it.
type SequencedHistory interface {
	History
	// AppendAt stores msgs as the session's messages at positions at,
	// at+1, ...; positions already stored are left as they are. at must
	// not be beyond the conversation's end.
	AppendAt(ctx context.Context, sessionID string, at int, msgs ...model.Message) error
}

// IdempotencyKeyMeta is the key in a tools/call request's params._meta
// that carries the call's idempotency key on durable turns: the same key
// on every send of the same call (a re-send after a restart), distinct
// for every other call. A server that remembers keys can answer a repeated
// key with the first answer instead of running the call again.
const IdempotencyKeyMeta = "io.agenthost/idempotency-key"

// ErrUnfinishedTurn is returned (as a turn's error event) when a turn is
// started on a durable session whose earlier turn has not finished: resume
// that one first (Session.Resume).
var ErrUnfinishedTurn = errors.New("the session has an unfinished turn; resume it first")

// durableCall is a tool call's part in a durable turn: its idempotency
// key and the turn's ledger of sends.
type durableCall struct {
	key   string
	steps Steps
	// tainted: replayed from a checkpoint whose arguments are masked
	// because the model's held a protected value; refused.
	tainted bool
	// task is the MCP task an earlier run of the call created
	// (TaskSteps): followed instead of sending the call again.
	task string
}

// detached reports a durable call's context ended because the engine
// stops (the turn is left unfinished, to be resumed), not because its
// caller went (an interrupted turn, recorded as finished).
func detached(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), approvals.ErrDetached)
}

// recordTask keeps the task a durable call's server created (TaskSteps),
// unless the id holds a protected value: nothing protected is stored.
func (h *Host) recordTask(ctx context.Context, dc *durableCall, taskID string) {
	ts, ok := dc.steps.(TaskSteps)
	if !ok || taskID == dc.task {
		return
	}
	if h.redactor.ContainsSecret(taskID) {
		h.logger.Warn("a task id holds a protected value: not recorded, so a resumed turn cannot follow the task")
		return
	}
	if err := ts.SentTask(ctx, dc.key, taskID); err != nil {
		h.logger.Warn("the task of a durable call could not be recorded; a resumed turn cannot follow it", "err", err)
		return
	}
	dc.task = taskID
}

// idempotencyKey is the idempotency key of call callID of turn turnID.
func idempotencyKey(turnID, callID string) string { return turnID + "/" + callID }

// requestID is the approval request id a durable call asks under: it
// binds the approval to the call (its idempotency key, hence session and
// turn), to its arguments, to the tool's definition (its pin hash, as
// `agenthost pins` records it) and to the policy revision. The same call
// taken up again after a restart asks under the same id and finds its request and the votes cast meanwhile; a call whose
// arguments, tool definition or policy changed asks under another id, so
// an approval is never used for anything but what was approved.
func requestID(key, args, pinHash, policyRev string) string {
	h := sha256.New()
	for _, part := range []string{key, canonicalJSON(args), pinHash, policyRev} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "apr_" + hex.EncodeToString(h.Sum(nil)[:8])
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

// turnAttachment is a durable turn's link to the caller that waits for
// it in this process: the turn's events go to t.emit, and ctx ending
// interrupts the turn.
type turnAttachment struct {
	t   *turn
	ctx context.Context

	// taken: a run of the turn took the attachment (attachments.wait; under
	// the attachments' mutex); ran is closed when that run has returned.
	taken   bool
	ran     chan struct{}
	ranOnce sync.Once
}

// runEnded closes ran, once.
func (att *turnAttachment) runEnded() { att.ranOnce.Do(func() { close(att.ran) }) }

// attachments are the durable turns of this process that have a caller,
// by turn id, and the recovered turns waiting for one.
type attachments struct {
	mu      sync.Mutex
	byID    map[string]*turnAttachment
	waiting map[string]chan struct{}
	// onUnattached is told of each turn the engine runs here with no
	// caller (Host.OnUnattachedTurn); unhanded are those it ran before
	// one was set.
	onUnattached func(turnID string, rec TurnRecord)
	unhanded     map[string]TurnRecord
}

// unattached tells the handler of a turn the engine runs here with no
// caller, or keeps it for the handler set later.
func (a *attachments) unattached(id string, rec TurnRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byID[id]; ok {
		return
	}
	if a.onUnattached == nil {
		if a.unhanded == nil {
			a.unhanded = map[string]TurnRecord{}
		}
		if len(a.unhanded) < maxUnhanded {
			a.unhanded[id] = rec
		}
		return
	}
	go a.onUnattached(id, rec)
}

// maxUnhanded bounds the taken-up turns kept for a handler not set yet
// (past it they wait for Session.Resume alone).
const maxUnhanded = 10_000

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
	a := &h.attached
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onUnattached = fn
	for id, rec := range a.unhanded {
		if _, ok := a.byID[id]; !ok && fn != nil {
			go fn(id, rec)
		}
	}
	a.unhanded = nil
}

func (a *attachments) attach(id string, att *turnAttachment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID, a.waiting = map[string]*turnAttachment{}, map[string]chan struct{}{}
	}
	a.byID[id] = att
	delete(a.unhanded, id)
	if ch, ok := a.waiting[id]; ok {
		close(ch)
		delete(a.waiting, id)
	}
}

func (a *attachments) detach(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byID, id)
}

// release detaches att (when it is still id's) and reports whether a run
// took it: its caller must then wait for att.ran before it lets the turn
// go, since the run may still be using it (an engine that stopped answers
// AwaitTurn before the turn's run has returned).
func (a *attachments) release(id string, att *turnAttachment) (taken bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID[id] == att {
		delete(a.byID, id)
	}
	return att.taken
}

// wait returns the turn's attachment, waiting for one while there is none
// (a turn the engine recovered before its session was resumed here).
func (a *attachments) wait(ctx context.Context, id string) (*turnAttachment, error) {
	for {
		a.mu.Lock()
		if att, ok := a.byID[id]; ok {
			att.taken = true
			a.mu.Unlock()
			return att, nil
		}
		if a.waiting == nil {
			a.byID, a.waiting = map[string]*turnAttachment{}, map[string]chan struct{}{}
		}
		ch, ok := a.waiting[id]
		if !ok {
			ch = make(chan struct{})
			a.waiting[id] = ch
		}
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// runDurableTurn is the host's DurableTurnFunc: it finds the turn's caller
// (waiting for one for a recovered turn), and runs the turn with its
// steps checkpointed.
func (h *Host) runDurableTurn(wctx context.Context, steps Steps, rec TurnRecord) error {
	h.attached.unattached(steps.TurnID(), rec)
	att, err := h.attached.wait(wctx, steps.TurnID())
	if err != nil {
		return err
	}
	defer att.runEnded()
	t := att.t
	if t.s.id != rec.SessionID {
		return fmt.Errorf("durable turn %s belongs to session %s, not %s", steps.TurnID(), rec.SessionID, t.s.id)
	}
	// The turn ends when its caller goes (an interrupted turn, recorded
	// as such) and when the engine stops (the process is going: the turn
	// is left unfinished for the next run, and an approval it waits for
	// stays pending: approvals.ErrDetached).
	// The caller's values (its trace, its turn span) come first, then the
	// engine's (the workflow's state).
	ctx, cancel := context.WithCancelCause(callerValues{Context: context.WithoutCancel(wctx), caller: att.ctx})
	defer cancel(nil)
	stopCaller := context.AfterFunc(att.ctx, func() { cancel(context.Canceled) })
	defer stopCaller()
	stopEngine := context.AfterFunc(wctx, func() { cancel(approvals.ErrDetached) })
	defer stopEngine()
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

// callerValues is the engine's context with the values of the turn's
// caller in front of its own.
type callerValues struct {
	context.Context
	caller context.Context
}

func (c callerValues) Value(key any) any {
	if v := c.caller.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// durableTurn runs a turn of a durable session through the engine, and
// forwards its events to yield from this goroutine (the iterator's).
func (s *Session) durableTurn(ctx context.Context, t *turn, id string, rec *TurnRecord) {
	h := s.host
	type delivery struct {
		e    Event
		done chan<- struct{}
	}
	events := make(chan delivery)
	emit := t.emit
	t.emit = func(e Event) {
		done := make(chan struct{})
		events <- delivery{e, done}
		<-done
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	att := &turnAttachment{t: t, ctx: ctx, ran: make(chan struct{})}
	h.attached.attach(id, att)
	defer h.attached.detach(id)
	var runErr error
	go func() {
		// events closes only once no run of the turn can emit any more: a
		// send on it after would panic, and the turn would be used by two
		// goroutines.
		defer close(events)
		if rec != nil {
			runErr = h.durable.RunTurn(context.WithoutCancel(ctx), id, *rec)
		} else {
			runErr = h.durable.AwaitTurn(context.WithoutCancel(ctx), id)
		}
		if h.attached.release(id, att) {
			<-att.ran
		}
	}()
	for d := range events {
		emit(d.e)
		close(d.done)
	}
	if runErr != nil && !t.ended {
		t.emit = emit
		t.fail(KindInternal, fmt.Errorf("durable turn %s: %w", id, runErr))
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
func (s *Session) Resume(ctx context.Context) iter.Seq[Event] {
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
	if s.transcript.seq == nil {
		// A replay appends again what the interrupted run appended: only
		// a History that appends at positions keeps one copy.
		t.fail(KindConfig, errors.New("durable turns need the session's History to append at positions (host.SequencedHistory); "+
			"leave SessionOptions.History nil to keep the conversation in the durable store"))
		return
	}
	if !s.transcript.loaded {
		// A session re-created with its id: an unfinished turn comes first.
		ids, err := h.durable.PendingTurns(ctx, s.id)
		if err != nil {
			t.fail(KindInternal, fmt.Errorf("durable turns: %w", err))
			return
		}
		if len(ids) > 0 {
			t.fail(KindConfig, fmt.Errorf("%w (turn %s)", ErrUnfinishedTurn, ids[0]))
			return
		}
	}
	rec := TurnRecord{SessionID: s.id, Subject: s.subject, TrustLevel: s.trustLevel, Prompt: prompt,
		MaxSteps: t.opts.MaxSteps, MaxRepeatedFailures: t.opts.MaxRepeatedFailures}
	s.durableTurn(ctx, t, newTurnID(s.id), &rec)
}

// newTurnID is a new durable turn's id: the session's id, a dot, the
// time and a random part (so a session's turns sort by start):
// SESSION.<16 hex digits>.<8 hex digits>.
func newTurnID(sessionID string) string {
	return fmt.Sprintf("%s.%016x.%s", sessionID, time.Now().UnixNano(), newID()[:8])
}

// turnIDTail is the length of what newTurnID puts after the session id.
const turnIDTail = 1 + 16 + 1 + 8

// TurnSession returns the session a durable turn id belongs to (the
// session id newTurnID began it with), and false for a string that is not
// a turn id. An engine lists a session's turns by the prefix "SESSION."
// and keeps those whose TurnSession is the session: the prefix also
// matches the turns of a session whose own id begins with it.
func TurnSession(turnID string) (string, bool) {
	n := len(turnID) - turnIDTail
	if n < 0 || turnID[n] != '.' || turnID[n+17] != '.' {
		return "", false
	}
	for i := n + 1; i < len(turnID); i++ {
		c := turnID[i]
		if i == n+17 {
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return turnID[:n], true
}

// errEngineStopped refuses a durable turn's append once the engine
// stopped: what the turn did after that was not checkpointed, and the
// conversation must hold only what the replay will find again.
var errEngineStopped = errors.New("the durable engine stopped; the turn resumes later")

// appendMsgs adds messages to the conversation (see errEngineStopped).
func (t *turn) appendMsgs(ctx context.Context, msgs ...model.Message) error {
	if t.engine != nil && t.engine.Err() != nil {
		return errEngineStopped
	}
	return t.s.transcript.append(ctx, t.s.id, msgs...)
}

// loadTranscript loads the session's conversation before the turn's first
// request. A durable turn checkpoints its length then: a replay loads the
// conversation and takes that many messages (what the interrupted run
// appended after comes again from the replay).
func (t *turn) loadTranscript(ctx context.Context) error {
	s := t.s
	if t.cp == nil {
		return s.transcript.load(ctx, s.id)
	}
	out, ran, err := t.cp.Step(ctx, "load", func(ctx context.Context) (json.RawMessage, error) {
		if err := s.transcript.load(ctx, s.id); err != nil {
			return nil, err
		}
		return json.Marshal(len(s.transcript.msgs))
	})
	if err != nil || ran {
		return err
	}
	var n int
	if err := json.Unmarshal(out, &n); err != nil {
		return fmt.Errorf("durable turn: the load checkpoint is unreadable: %w", err)
	}
	return s.transcript.reload(ctx, s.id, n)
}

// modelAnswer is a durable turn's model step as checkpointed: the answer
// with protected values masked (what the transcript holds), which of its
// calls held one, and the usage; or why there is no answer.
type modelAnswer struct {
	Message     model.Message `json:"message"`
	Tainted     []bool        `json:"tainted,omitempty"`
	Usage       model.Usage   `json:"usage"`
	Finish      string        `json:"finish,omitempty"`
	Error       string        `json:"error,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`

	// original is the answer as the model gave it, in the run that asked
	// (never checkpointed).
	original model.Message
}

// modelStep asks the model as a checkpointed step, or replays its answer.
func (t *turn) modelStep(ctx context.Context, view *llmview.View) (modelAnswer, bool, error) {
	s, h := t.s, t.s.host
	var ans modelAnswer
	out, ran, err := t.cp.Step(ctx, "model", func(ctx context.Context) (json.RawMessage, error) {
		msg, err := t.generate(ctx, &model.Request{Model: h.modelName, Messages: s.requestMessages(), Tools: view.Tools()})
		switch {
		case err != nil && ctx.Err() != nil:
			ans = modelAnswer{Interrupted: true}
		case err != nil:
			ans = modelAnswer{Error: h.redactor.Redact(fmt.Sprintf("model: %v", err))}
		default:
			msg = settleAnswer(msg)
			ans = modelAnswer{Message: mask.Message(h.redactor, msg), Usage: t.last, Finish: t.finish, original: msg}
			for i, tc := range msg.ToolCalls {
				if h.redactor.ContainsSecret(tc.Arguments) {
					if ans.Tainted == nil {
						ans.Tainted = make([]bool, len(msg.ToolCalls))
					}
					ans.Tainted[i] = true
				}
			}
		}
		return json.Marshal(ans)
	})
	if err != nil {
		return modelAnswer{}, false, fmt.Errorf("durable turn: model step: %w", err)
	}
	if ran {
		return ans, true, nil
	}
	var replayed modelAnswer
	if err := json.Unmarshal(out, &replayed); err != nil {
		return modelAnswer{}, false, fmt.Errorf("durable turn: the model checkpoint is unreadable: %w", err)
	}
	t.usage.Add(replayed.Usage)
	t.finish, t.last = replayed.Finish, replayed.Usage
	return replayed, false, nil
}

// stepOutcome is a durable tool call's step as checkpointed: what the
// model is told.
type stepOutcome struct {
	Text   string `json:"text"`
	Failed bool   `json:"failed,omitempty"`
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
		prior, err := dc.steps.Sent(ctx, dc.key)
		var task string
		var taskErr error
		if ts, ok := dc.steps.(TaskSteps); ok && err == nil && prior > 0 {
			task, taskErr = ts.TaskOf(ctx, dc.key)
		}
		if err := c.s.resend(c, dc, prior, err, task, taskErr); err != nil {
			return nil, err
		}
		failpoint.Hit(failpoint.DurableAfterLedger)
		c.meta = map[string]any{IdempotencyKeyMeta: dc.key}
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
	if sentErr != nil {
		c.resultKind = auditlog.ResultNotExecuted
		return hosterr.New(KindInternal, hosterr.MsgOperatorFailure, sentErr, "%s/%s: the send could not be recorded, so the call was not sent: %v", server, tool, sentErr)
	}
	if prior == 0 {
		return nil
	}
	// The call created a task before the process stopped: the task runs
	// on (or ran) on the server, follow it.
	if taskErr != nil {
		h.logger.Warn("the task of a durable call could not be read", "err", taskErr)
	} else if task != "" {
		h.logger.Info("following the task a durable call created before the process stopped", "server", server, "tool", tool, "session", s.id)
		dc.task = task
		return nil
	}
	if prior == 1 && h.idempotentByTrust(server, c.ct) {
		h.logger.Info("re-sending a durable call whose result was lost (the tool is idempotent)", "server", server, "tool", tool, "session", s.id)
		return nil
	}
	h.logger.Warn("a durable call was sent before the process stopped and its result was lost; not sent again (the tool is not idempotent by a trusted source)",
		"server", server, "tool", tool, "session", s.id)
	c.resultKind = auditlog.ResultUnknown
	return hosterr.New(KindToolError, hosterr.MsgMaybeRan, ErrMaybeRan, "%s/%s: %v", server, tool, ErrMaybeRan)
}

// ErrMaybeRan: a durable call was sent, and its result lost, before the
// process stopped; it was not sent again.
var ErrMaybeRan = errors.New("the call was sent before the session was interrupted and its result was lost: it may or may not have run; it was not sent again")

// UnfinishedTurns returns the ids of the session's durable turns that have
// not finished, wherever they run (none on a host without Durability).
func (h *Host) UnfinishedTurns(ctx context.Context, sessionID string) ([]string, error) {
	if h.durable == nil {
		return nil, nil
	}
	return h.durable.PendingTurns(ctx, sessionID)
}
