package durableturn

import (
	"context"
	"log/slog"
)

// ToolCall is a tool call's part in a durable turn: its idempotency key
// and the turn's ledger of sends.
type ToolCall struct {
	Key   string
	Steps Steps
	// Tainted: replayed from a checkpoint whose arguments are masked
	// because the model's held a protected value; refused.
	Tainted bool
	// Task is the MCP task an earlier run of the call created
	// (TaskSteps): followed instead of sending the call again.
	Task string
}

// Ledger is the send ledger's word on the call about to be sent, for
// Decide: it records the send (Steps.Sent: prior sends, or sentErr
// recording this one) and, for a call sent before, reads the task an
// earlier send created (TaskSteps.TaskOf: task, or taskErr).
func (tc *ToolCall) Ledger(ctx context.Context) (prior int, task string, taskErr, sentErr error) {
	prior, sentErr = tc.Steps.Sent(ctx, tc.Key)
	if ts, ok := tc.Steps.(TaskSteps); ok && sentErr == nil && prior > 0 {
		task, taskErr = ts.TaskOf(ctx, tc.Key)
	}
	return prior, task, taskErr, sentErr
}

// Secrets reports whether a string holds a protected value
// (bindings.Redactor).
type Secrets interface {
	ContainsSecret(s string) bool
}

// RecordTask keeps the task the call's server created (TaskSteps), unless
// the id holds a protected value (secrets): nothing protected is stored.
// What could not be recorded is logged: a resumed turn cannot follow that
// task.
func (tc *ToolCall) RecordTask(ctx context.Context, taskID string, secrets Secrets, logger *slog.Logger) {
	ts, ok := tc.Steps.(TaskSteps)
	if !ok || taskID == tc.Task {
		return
	}
	if secrets.ContainsSecret(taskID) {
		logger.Warn("a task id holds a protected value: not recorded, so a resumed turn cannot follow the task")
		return
	}
	if err := ts.SentTask(ctx, tc.Key, taskID); err != nil {
		logger.Warn("the task of a durable call could not be recorded; a resumed turn cannot follow it", "err", err)
		return
	}
	tc.Task = taskID
}
