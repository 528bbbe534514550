package host

import turnpkg "github.com/agenthost/agenthost/host/internal/turn"

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
type History = turnpkg.History

// SequencedHistory is a History that appends at a position, idempotently:
// a replayed append of messages already stored at that position changes
// nothing. Durable turns need it (a replay appends again what the
// interrupted run appended); the durable store's History implements it.
type SequencedHistory = turnpkg.SequencedHistory

// MemoryHistory is a History in memory, for tests and for seeding
// (methods Load, Append and Forget). Sessions without a History keep
// their transcript privately instead.
type MemoryHistory = turnpkg.MemoryHistory

// NewMemoryHistory returns an empty MemoryHistory.
func NewMemoryHistory() *MemoryHistory { return turnpkg.NewMemoryHistory() }

// transcript is a session's conversation (package turn owns it).
type transcript = turnpkg.Transcript
