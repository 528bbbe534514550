// Package turn owns the agent loop of a turn that needs no host: the loop
// itself (Run, asking its host through Loop), a turn's bookkeeping and
// end (State: its events, steps, usage, the model's stream), the
// conversation a session keeps (History, its in-memory form and the
// working transcript with its repair of unanswered calls), the messages a
// model request is built from, the approvers' view of the conversation,
// the settling of a model answer, the limits of a turn and its count of
// repeated failing calls, a call's tool_call and tool_result events, and
// the ordering of a step's concurrent calls' events. Package host runs
// turns with it; it never imports host.
package turn

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/model"
)

// History keeps sessions' conversations. A chat backend that wants a
// conversation to outlive the process (a restart, another replica) gives
// sessions a History backed by its own store: the session loads the
// transcript from it before its first turn and appends every message as the
// turn produces it, so a session re-created with the same id and History
// continues where the last one stopped. Seeding a conversation is appending
// to the History before the first turn.
//
// Messages are agenthost's own plain types (package model), encodable as
// JSON. They never carry secure values: the transcript holds what the model
// sent and what it was told.
type History interface {
	// Load returns the session's messages in order (none for a new session).
	Load(ctx context.Context, sessionID string) ([]model.Message, error)
	// Append adds messages to the end of the session's conversation. A turn
	// stops with an error when it fails.
	Append(ctx context.Context, sessionID string, msgs ...model.Message) error
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

// MemoryHistory is a History in memory, for tests and for seeding. Sessions
// without a History keep their transcript privately instead.
type MemoryHistory struct {
	mu   sync.Mutex
	msgs map[string][]model.Message
}

// NewMemoryHistory returns an empty MemoryHistory.
func NewMemoryHistory() *MemoryHistory {
	return &MemoryHistory{msgs: map[string][]model.Message{}}
}

// Load implements History.
func (m *MemoryHistory) Load(_ context.Context, sessionID string) ([]model.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs[sessionID]), nil
}

// Append implements History.
func (m *MemoryHistory) Append(_ context.Context, sessionID string, msgs ...model.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs[sessionID] = append(m.msgs[sessionID], msgs...)
	return nil
}

// Forget drops a session's conversation.
func (m *MemoryHistory) Forget(sessionID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.msgs, sessionID)
}

// historyTimeout bounds one History.Append.
const historyTimeout = 10 * time.Second

// Repair answers every tool call of msgs that has no tool message
// with hosterr.InterruptedCallResult, so that a resumed conversation is one a model
// accepts. It returns the messages to append (nil when none are missing).
func Repair(msgs []model.Message) []model.Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var missing []model.Message
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			if !answered[tc.ID] {
				answered[tc.ID] = true
				missing = append(missing, model.Message{Role: model.RoleTool, ToolCallID: tc.ID, Content: hosterr.InterruptedCallResult})
			}
		}
	}
	return missing
}

// Transcript is a session's conversation: the working copy, and the History
// it is kept in (nil: memory only). Seq is set for the turns of a durable
// host: appends go to their position (a replay's appends change nothing).
type Transcript struct {
	History History
	Seq     SequencedHistory
	Loaded  bool
	Msgs    []model.Message
}

// Reload reads the conversation again and keeps its first n messages: a
// replayed durable turn starts from the conversation as its first run saw
// it.
func (t *Transcript) Reload(ctx context.Context, sessionID string, n int) error {
	if t.History == nil {
		t.Msgs, t.Loaded = t.Msgs[:min(n, len(t.Msgs))], true
		return nil
	}
	msgs, err := t.History.Load(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("loading the conversation: %w", err)
	}
	if len(msgs) < n {
		return fmt.Errorf("loading the conversation: %d messages stored, the turn began after %d", len(msgs), n)
	}
	t.Msgs, t.Loaded = msgs[:n:n], true
	return nil
}

// Load reads the conversation from the History once, answering calls left
// without results.
func (t *Transcript) Load(ctx context.Context, sessionID string) error {
	if t.Loaded || t.History == nil {
		t.Loaded = true
		return nil
	}
	msgs, err := t.History.Load(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("loading the conversation: %w", err)
	}
	t.Msgs = msgs
	t.Loaded = true
	if missing := Repair(msgs); missing != nil {
		return t.Append(ctx, sessionID, missing...)
	}
	return nil
}

// Append adds messages to the working copy and the History.
func (t *Transcript) Append(ctx context.Context, sessionID string, msgs ...model.Message) error {
	at := len(t.Msgs)
	t.Msgs = append(t.Msgs, msgs...)
	if t.History == nil {
		return nil
	}
	// A turn that was interrupted still records what happened, within a
	// bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyTimeout)
	defer cancel()
	var err error
	if t.Seq != nil {
		err = t.Seq.AppendAt(ctx, sessionID, at, msgs...)
	} else {
		err = t.History.Append(ctx, sessionID, msgs...)
	}
	if err != nil {
		return fmt.Errorf("saving the conversation: %w", err)
	}
	return nil
}
