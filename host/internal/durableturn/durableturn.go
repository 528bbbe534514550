// Package durableturn owns the host side of durable turns that needs no
// host: the seam's types (Durability, Steps, TaskSteps, TurnRecord, the
// step function and outcome), the checkpoints' payloads and their
// encoding (the model step's answer, a tool call's outcome), the turn id's
// form, the send ledger's idempotency key and the key in params._meta
// that carries it, the approval request id of a durable call, the rule
// deciding whether a call recorded as sent goes again, a tool call's part
// in a durable turn (ToolCall: its ledger read, its task recorded), and
// the registry of this process's turns that have a caller. Package host runs durable
// turns with it; it never imports host.
package durableturn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/internal/turn"
	"github.com/agenthost/agenthost/host/model"
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
	Start(run TurnFunc) error
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
	History() turn.History
}

// TurnFunc runs one durable turn: steps is the turn's checkpoint log, rec
// what the turn was started with.
type TurnFunc func(ctx context.Context, steps Steps, rec TurnRecord) error

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
	// Tag is the caller's opaque label of the turn (TurnOptions.Tag);
	// empty for a turn started without one, or by a version before it.
	Tag string `json:"tag,omitempty"`
}

// Steps is a durable turn's checkpoint log, handed to TurnFunc. A turn
// calls Step and Go in the same order on every replay; the engine matches
// each call with the checkpoint at its position.
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

// IdempotencyKeyMeta is the key in a tools/call request's params._meta
// that carries the call's idempotency key on durable turns: the same key
// on every send of the same call (a re-send after a restart), distinct
// for every other call. A server that remembers keys can answer a repeated
// key with the first answer instead of running the call again.
const IdempotencyKeyMeta = "io.agenthost/idempotency-key"

// IdempotencyKey is the idempotency key of call callID of turn turnID.
func IdempotencyKey(turnID, callID string) string { return turnID + "/" + callID }

// Meta is the params._meta of a durable call's request: its idempotency
// key.
func Meta(key string) map[string]any { return map[string]any{IdempotencyKeyMeta: key} }

// RequestID is the approval request id a durable call asks under: it
// binds the approval to the call (its idempotency key, hence session and
// turn), to its arguments, to the tool's definition (its pin hash, as
// `agenthost pins` records it) and to the policy revision. The same call
// taken up again after a restart asks under the same id and finds its
// request and the votes cast meanwhile; a call whose arguments, tool
// definition or policy changed asks under another id, so an approval is
// never used for anything but what was approved.
func RequestID(key, args, pinHash, policyRev string) string {
	h := sha256.New()
	for _, part := range []string{key, turn.CanonicalJSON(args), pinHash, policyRev} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "apr_" + hex.EncodeToString(h.Sum(nil)[:8])
}

// NewTurnID is a new durable turn's id: the session's id, a dot, the
// time in nanoseconds and a random part of 8 hex digits (so a session's
// turns sort by start): SESSION.<16 hex digits>.<8 hex digits>.
func NewTurnID(sessionID string, unixNano int64, random string) string {
	return fmt.Sprintf("%s.%016x.%s", sessionID, unixNano, random)
}

// TurnIDTail is the length of what NewTurnID puts after the session id.
const TurnIDTail = 1 + 16 + 1 + 8

// TurnSession returns the session a durable turn id belongs to (the
// session id NewTurnID began it with), and false for a string that is not
// a turn id.
func TurnSession(turnID string) (string, bool) {
	n := len(turnID) - TurnIDTail
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

// ModelAnswer is a durable turn's model step as checkpointed: the answer
// with protected values masked (what the transcript holds), which of its
// calls held one, and the usage; or why there is no answer.
type ModelAnswer struct {
	Message     model.Message `json:"message"`
	Tainted     []bool        `json:"tainted,omitempty"`
	Usage       model.Usage   `json:"usage"`
	Finish      string        `json:"finish,omitempty"`
	Error       string        `json:"error,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`

	// Original is the answer as the model gave it, in the run that asked
	// (never checkpointed).
	Original model.Message `json:"-"`
}

// Answered is the model step of answer msg (as the model gave it) with
// masked its masked form: the calls whose arguments hold a protected
// value (secret) are marked tainted.
func Answered(msg, masked model.Message, usage model.Usage, finish string, secret func(string) bool) ModelAnswer {
	ans := ModelAnswer{Message: masked, Usage: usage, Finish: finish, Original: msg}
	for i, tc := range msg.ToolCalls {
		if secret(tc.Arguments) {
			if ans.Tainted == nil {
				ans.Tainted = make([]bool, len(msg.ToolCalls))
			}
			ans.Tainted[i] = true
		}
	}
	return ans
}

// Call starts run as the turn's next "tool" step (steps match a replay's
// calls in the order they start) and returns the wait for its outcome:
// the one checkpointed when the step completed before, and the operator
// failure the model is told of when the step could not start, failed, or
// left an unreadable checkpoint.
func Call(ctx context.Context, steps Steps, run func(ctx context.Context) turn.Outcome, operatorFailure string) func() turn.Outcome {
	ch, err := steps.Go(ctx, "tool", func(ctx context.Context) (json.RawMessage, error) {
		return json.Marshal(run(ctx))
	})
	return func() turn.Outcome {
		if err != nil {
			return turn.Outcome{Text: operatorFailure, Failed: true}
		}
		r := <-ch
		var o turn.Outcome
		if r.Err != nil || json.Unmarshal(r.Out, &o) != nil {
			return turn.Outcome{Text: operatorFailure, Failed: true}
		}
		return o
	}
}

// Resend is the decision on a durable call about to be sent, given the
// send ledger's word.
type Resend int

const (
	// Send: the first send of the call.
	Send Resend = iota
	// NotRecorded: the send could not be recorded; the call is not sent.
	NotRecorded
	// FollowTask: an earlier send created a task; follow it.
	FollowTask
	// SendAgain: an earlier send's result was lost and the tool is
	// idempotent by a trusted source: sent again, once.
	SendAgain
	// MaybeRan: an earlier send's result was lost; not sent again.
	MaybeRan
)

// Decide is the rule for a durable call: prior sends recorded (or
// sentErr recording this one), the task an earlier send created (or
// taskErr reading it), and whether the tool is idempotent by a trusted
// source (asked only when it matters).
func Decide(prior int, sentErr error, task string, taskErr error, idempotent func() bool) Resend {
	switch {
	case sentErr != nil:
		return NotRecorded
	case prior == 0:
		return Send
	case taskErr == nil && task != "":
		return FollowTask
	case prior == 1 && idempotent():
		return SendAgain
	}
	return MaybeRan
}

// ErrUnfinishedTurn is returned (as a turn's error event) when a turn is
// started on a durable session whose earlier turn has not finished: resume
// that one first (Session.Resume).
var ErrUnfinishedTurn = errors.New("the session has an unfinished turn; resume it first")

// ErrMaybeRan: a durable call was sent, and its result lost, before the
// process stopped; it was not sent again.
var ErrMaybeRan = errors.New("the call was sent before the session was interrupted and its result was lost: it may or may not have run; it was not sent again")

// CallerValues is the engine's context with the values of the turn's
// caller in front of its own.
type CallerValues struct {
	context.Context
	Caller context.Context
}

// Value implements context.Context.
func (c CallerValues) Value(key any) any {
	if v := c.Caller.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// RunContext is the context a durable turn runs in: it ends when its
// caller goes (context.Canceled: an interrupted turn, recorded as such)
// and when the engine stops (detached: the process is going, the turn is
// left unfinished for the next run, and an approval it waits for stays
// pending). The caller's values (its trace, its turn span) come first,
// then the engine's (the workflow's state). stop releases it.
func RunContext(engine, caller context.Context, detached error) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(CallerValues{Context: context.WithoutCancel(engine), Caller: caller})
	stopCaller := context.AfterFunc(caller, func() { cancel(context.Canceled) })
	stopEngine := context.AfterFunc(engine, func() { cancel(detached) })
	return ctx, func() {
		stopEngine()
		stopCaller()
		cancel(nil)
	}
}

// Load loads the session's conversation tr before a durable turn's first
// request, as its "load" step, which checkpoints its length: a replay
// loads the conversation and takes that many messages (what the
// interrupted run appended after comes again from the replay).
func Load(ctx context.Context, steps Steps, tr *turn.Transcript, sessionID string) error {
	out, ran, err := steps.Step(ctx, "load", func(ctx context.Context) (json.RawMessage, error) {
		if err := tr.Load(ctx, sessionID); err != nil {
			return nil, err
		}
		return json.Marshal(len(tr.Msgs))
	})
	if err != nil || ran {
		return err
	}
	var n int
	if err := json.Unmarshal(out, &n); err != nil {
		return fmt.Errorf("durable turn: the load checkpoint is unreadable: %w", err)
	}
	return tr.Reload(ctx, sessionID, n)
}

// Ask runs ask as a durable turn's "model" step, or replays the answer it
// checkpointed (ran false).
func Ask(ctx context.Context, steps Steps, ask func(ctx context.Context) ModelAnswer) (ans ModelAnswer, ran bool, err error) {
	out, ran, err := steps.Step(ctx, "model", func(ctx context.Context) (json.RawMessage, error) {
		ans = ask(ctx)
		return json.Marshal(ans)
	})
	if err != nil {
		return ModelAnswer{}, false, fmt.Errorf("durable turn: model step: %w", err)
	}
	if ran {
		return ans, true, nil
	}
	var replayed ModelAnswer
	if err := json.Unmarshal(out, &replayed); err != nil {
		return ModelAnswer{}, false, fmt.Errorf("durable turn: the model checkpoint is unreadable: %w", err)
	}
	return replayed, false, nil
}
