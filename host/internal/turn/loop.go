package turn

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/model"
)

// Options tune one turn of the agent loop.
type Options struct {
	// MaxSteps bounds model requests in the turn (default DefaultMaxSteps).
	MaxSteps int
	// MaxRepeatedFailures stops the turn when the model makes the same
	// failing call this many times (default DefaultMaxRepeatedFailures).
	MaxRepeatedFailures int
	// TraceParent and TraceState are an incoming W3C trace context
	// (traceparent and tracestate header values) the turn's trace
	// continues, for a backend whose request carried one. They matter only
	// with a host's Options.Observer; an observer may also take the trace from
	// ctx.
	TraceParent, TraceState string
	// Tag is an opaque label of a durable turn, stored with it (its
	// TurnRecord's Tag) and handed back with it to Host.OnUnattachedTurn
	// when the turn is taken up without a caller: serve's shared mode
	// names the served turn the workflow writes to. Never a secure value.
	Tag string
}

// The limits of a turn when its options leave them unset.
const (
	DefaultMaxSteps            = 20
	DefaultMaxRepeatedFailures = 3
)

// Limits returns a turn's step bound and repeated-failure bound, with the
// defaults for those not set (zero or less).
func Limits(maxSteps, maxRepeats int) (int, int) {
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	if maxRepeats <= 0 {
		maxRepeats = DefaultMaxRepeatedFailures
	}
	return maxSteps, maxRepeats
}

// Repeats counts a turn's failing calls by tool name and canonical
// arguments: the same failing call made max times stops the turn.
type Repeats struct {
	max int
	n   map[string]int
}

// NewRepeats returns a count that stops at max repetitions.
func NewRepeats(max int) *Repeats { return &Repeats{max: max, n: map[string]int{}} }

// Fail counts one failure of the call name(args) and returns how many
// there were, and whether the turn stops.
func (r *Repeats) Fail(name, args string) (int, bool) {
	key := name + "\x00" + CanonicalJSON(args)
	r.n[key]++
	return r.n[key], r.n[key] >= r.max
}

// Settle makes the model's answer a message of the conversation, in
// memory and in a durable turn alike: the assistant's role, and an id
// (from newID) for each tool call the model gave none (the call's events,
// audit records and result message refer to it).
func Settle(msg model.Message, newID func() string) model.Message {
	msg.Role = model.RoleAssistant
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].ID == "" {
			msg.ToolCalls[i].ID = newID()
		}
	}
	return msg
}

// Conversation is what approvers of a step's calls are shown of the
// conversation msgs: the last user message and the model's text of the
// step (modelText, already masked), as the model saw them, with every
// protected value masked (redact) and each text bounded.
func Conversation(msgs []model.Message, modelText string, redact func(string) string) approvals.Conversation {
	var user string
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			user = msgs[i].Content
			break
		}
	}
	return approvals.Conversation{
		UserMessage: hosterr.Truncate(redact(user), approvals.MaxConversationText),
		ModelText:   hosterr.Truncate(redact(modelText), approvals.MaxConversationText),
	}
}

// RequestMessages is the conversation msgs as sent to the model, after
// the system prompt when there is one.
func RequestMessages(systemPrompt string, msgs []model.Message) []model.Message {
	out := make([]model.Message, 0, len(msgs)+1)
	if systemPrompt != "" {
		out = append(out, model.Message{Role: model.RoleSystem, Content: systemPrompt})
	}
	return append(out, msgs...)
}

// ToolResults are the tool messages that answer calls, texts[i] calls[i].
func ToolResults(calls []model.ToolCall, texts func(i int) string) []model.Message {
	results := make([]model.Message, len(calls))
	for i, tc := range calls {
		results[i] = model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Content: texts(i)}
	}
	return results
}

// CanonicalJSON is s re-encoded with sorted keys and no HTML escaping, or
// s itself when it is not JSON: equal arguments compare equal.
func CanonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // map keys are sorted by encoding/json
	return buf.String()
}

// Batch orders the events of a step's concurrent calls. Their events are
// forwarded from one goroutine (Forward's), in the order they happen, and
// a call goes on only once the consumer has had its event: every call's
// first event (its tool_call) is handled before any call of the batch
// goes past it, and an event is not lost when the turn is cancelled
// (Forward takes every event until the calls end).
type Batch[E any] struct {
	events    chan delivery[E]
	wg        sync.WaitGroup
	announced sync.WaitGroup
}

type delivery[E any] struct {
	e    E
	done chan struct{}
}

// NewBatch returns a batch of n calls; each must be made with Call and
// ended with Call.Done.
func NewBatch[E any](n int) *Batch[E] {
	b := &Batch[E]{events: make(chan delivery[E])}
	b.announced.Add(n)
	return b
}

// Call is one call of a batch.
type Call[E any] struct {
	b    *Batch[E]
	once sync.Once
	done chan struct{}
}

// Call returns the batch's next call.
func (b *Batch[E]) Call() *Call[E] {
	return &Call[E]{b: b, done: make(chan struct{}, 1)}
}

// Emit hands e to the consumer and returns once it was handled; after the
// call's first event it waits until every call of the batch announced
// itself.
func (c *Call[E]) Emit(e E) {
	c.b.events <- delivery[E]{e, c.done}
	<-c.done
	c.once.Do(func() {
		c.b.announced.Done()
		c.b.announced.Wait()
	})
}

// Done ends the call's part in the announcement (a call that emitted
// nothing, or was replayed); it may be called more than once.
func (c *Call[E]) Done() { c.once.Do(c.b.announced.Done) }

// Go runs fn in a goroutine of the batch: Forward returns once every such
// fn has.
func (b *Batch[E]) Go(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// Forward delivers the batch's events to emit until every Go fn has
// returned.
func (b *Batch[E]) Forward(emit func(E)) {
	go func() {
		b.wg.Wait()
		close(b.events)
	}()
	for d := range b.events {
		emit(d.e)
		d.done <- struct{}{}
	}
}

// Relay hands events sent from other goroutines to one consumer: Run's
// caller's goroutine.
type Relay[E any] struct{ events chan delivery[E] }

// NewRelay returns a relay to Run once.
func NewRelay[E any]() *Relay[E] { return &Relay[E]{events: make(chan delivery[E])} }

// Send hands e to Run's emit and returns once it was handled. No Send may
// come once Run's fn has returned.
func (r *Relay[E]) Send(e E) {
	done := make(chan struct{}, 1)
	r.events <- delivery[E]{e, done}
	<-done
}

// Run runs fn in a goroutine of its own and delivers every Send to emit,
// from the caller's goroutine, until fn has returned.
func (r *Relay[E]) Run(emit func(E), fn func()) {
	go func() {
		defer close(r.events)
		fn()
	}()
	for d := range r.events {
		emit(d.e)
		d.done <- struct{}{}
	}
}
