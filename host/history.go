package host

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

// repairTranscript answers every tool call of msgs that has no tool message
// with hosterr.InterruptedCallResult, so that a resumed conversation is one a model
// accepts. It returns the messages to append (nil when none are missing).
func repairTranscript(msgs []model.Message) []model.Message {
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

// transcript is a session's conversation: the working copy, and the History
// it is kept in (nil: memory only). seq is set for the turns of a durable
// host: appends go to their position (a replay's appends change nothing).
type transcript struct {
	history History
	seq     SequencedHistory
	loaded  bool
	msgs    []model.Message
}

// reload reads the conversation again and keeps its first n messages: a
// replayed durable turn starts from the conversation as its first run saw
// it.
func (t *transcript) reload(ctx context.Context, sessionID string, n int) error {
	if t.history == nil {
		t.msgs, t.loaded = t.msgs[:min(n, len(t.msgs))], true
		return nil
	}
	msgs, err := t.history.Load(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("loading the conversation: %w", err)
	}
	if len(msgs) < n {
		return fmt.Errorf("loading the conversation: %d messages stored, the turn began after %d", len(msgs), n)
	}
	t.msgs, t.loaded = msgs[:n:n], true
	return nil
}

// load reads the conversation from the History once, answering calls left
// without results.
func (t *transcript) load(ctx context.Context, sessionID string) error {
	if t.loaded || t.history == nil {
		t.loaded = true
		return nil
	}
	msgs, err := t.history.Load(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("loading the conversation: %w", err)
	}
	t.msgs = msgs
	t.loaded = true
	if missing := repairTranscript(msgs); missing != nil {
		return t.append(ctx, sessionID, missing...)
	}
	return nil
}

// append adds messages to the working copy and the History.
func (t *transcript) append(ctx context.Context, sessionID string, msgs ...model.Message) error {
	at := len(t.msgs)
	t.msgs = append(t.msgs, msgs...)
	if t.history == nil {
		return nil
	}
	// A turn that was interrupted still records what happened, within a
	// bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyTimeout)
	defer cancel()
	var err error
	if t.seq != nil {
		err = t.seq.AppendAt(ctx, sessionID, at, msgs...)
	} else {
		err = t.history.Append(ctx, sessionID, msgs...)
	}
	if err != nil {
		return fmt.Errorf("saving the conversation: %w", err)
	}
	return nil
}
