package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/permhook"
	"github.com/agenthost/agenthost/host/internal/secureargs"
	"github.com/agenthost/agenthost/host/internal/views"
)

// SessionOptions describe one session: who it acts for and what it may do.
type SessionOptions struct {
	// ID identifies the session in audit records and to credential sources;
	// empty generates a random one.
	ID string
	// Subject is the user or tenant the session acts for.
	Subject string
	// TrustLevel (1..5); 0 takes the config default.
	TrustLevel int
	// Values are session values for bindings of kind `session`.
	Values map[string]string
	// Approver answers this session's `ask` decisions; nil takes the
	// host's (Options.Approver), else asks are denied.
	Approver approvals.Approver
	// History keeps the conversation beyond this Session value (see
	// History); nil keeps it in memory for the session's life.
	History History
}

// Session is one conversation's scope: identity, trust level and session
// values. Many sessions share one Host; a Session is safe for concurrent use.
type Session struct {
	host       *Host
	id         string
	subject    string
	trustLevel int

	gate *approvals.Gate

	// secure are the session's secure values (package secureargs), the
	// decide stage's seam: resolved by the binder after the gate allowed
	// the call and prepared once per definition (Args), resolved afresh
	// for the one retry after the server rejected them (Renew), dropped
	// when the session closes (Clear). Held here, not pointed to: one
	// allocation fewer a session.
	secure secureargs.Session

	mu          sync.RWMutex
	values      bindings.MapValues
	valuesEpoch atomic.Uint64
	// labels are the distinct labels of the session's results (at most
	// the two there are), sorted (labels.go).
	labels []string

	// views is the session's per-server view cache (package views).
	views views.Cache

	// turnMu serialises turns; transcript is only touched under it.
	turnMu     sync.Mutex
	transcript transcript
}

// NewSession opens a session on the host.
func (h *Host) NewSession(opts SessionOptions) *Session {
	id := opts.ID
	if id == "" {
		id = newID()
	}
	trust := opts.TrustLevel
	if trust == 0 {
		trust = h.cfg.Session.TrustLevel
	}
	if trust == 0 {
		trust = 1
	}
	values := bindings.MapValues{}
	for k, v := range opts.Values {
		values[k] = v
		h.protectSessionValue(k, v)
	}
	approver := opts.Approver
	if approver == nil {
		approver = h.approver
	}
	approver = permhook.Wrap(h.hooks, h.cfg.Hooks, h.logger, approver)
	// NewGate fails only without a Policy, which a Host always has.
	gate, _ := approvals.NewGate(approvals.GateConfig{Policy: h.policy, Approver: approver, Grants: h.grantStore()})
	history := opts.History
	if history == nil && h.durable != nil {
		history = h.durable.History()
	}
	tr := transcript{History: history}
	if h.durable != nil {
		tr.Seq, _ = history.(SequencedHistory)
	}
	s := &Session{host: h, id: id, subject: opts.Subject, trustLevel: trust, values: values, gate: gate,
		transcript: tr}
	s.secure.Init(h.secureSrc)
	return s
}

// Close ends the session: its cached credential values are dropped.
func (s *Session) Close() {
	s.host.binder.ForgetSession(s.id)
	s.secure.Clear()
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Subject is the user or tenant the session acts for.
func (s *Session) Subject() string { return s.subject }

// TrustLevel is the session's trust level (1..5).
func (s *Session) TrustLevel() int { return s.trustLevel }

// SetValue sets a session value (used by `session` bindings).
func (s *Session) SetValue(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(bindings.MapValues, len(s.values)+1)
	for k, v := range s.values {
		next[k] = v
	}
	next[name] = value
	s.values = next
	s.valuesEpoch.Add(1)
	s.host.protectSessionValue(name, value)
}

// protectSessionValue registers a session value that a binding takes as
// internal or secret with the redactor at once: a server that learned it
// earlier (in another process, say) may have planted it in a definition
// or a result before any call of this host resolves it.
func (h *Host) protectSessionValue(name, value string) {
	if h.binder.ProtectsSessionValue(name) {
		h.redactor.Add(value)
	}
}

// bindingContext carries the session's values to the session source.
func (s *Session) bindingContext(ctx context.Context) context.Context {
	return bindings.ContextWithSessionValues(ctx, s.sessionValues())
}

// sessionValues are the session's values (read-only: SetValue replaces
// the map).
// secureOf is the session the secure values of its calls are of, its
// session values as they are now.
func (s *Session) secureOf() secureargs.Of {
	return secureargs.Of{ID: s.id, Subject: s.subject, Values: s.sessionValues()}
}

func (s *Session) sessionValues() bindings.MapValues {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.values
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newCallID is "call_" and a random id, built in one allocation (it is made
// for every call).
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var id [len("call_") + 2*len(b)]byte
	copy(id[:], "call_")
	hex.Encode(id[len("call_"):], b[:])
	return string(id[:])
}
