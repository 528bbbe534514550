// Package event defines the events of a turn: what Session.Turn yields
// and `run --output-format stream-json` prints, one JSON object a line
// (docs/events.md). Package host re-exports them (host.Event,
// host.EventToolCall, ...); a program may use either name.
package event

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/model"
)

// Type names an agent-loop event. The values are the "type" of
// `run --output-format stream-json` lines (docs/events.md).
type Type string

// Event types.
const (
	SessionStart   Type = "session_start"
	AssistantDelta Type = "assistant_delta" // a piece of streamed assistant text
	Assistant      Type = "assistant"       // a complete assistant text
	ToolCall       Type = "tool_call"
	Approval       Type = "approval"
	// ApprovalRequested: a call needs a person's approval, sent
	// before the decision (the approval event follows).
	ApprovalRequested Type = "approval_requested"
	// ToolProgress: a running call's server reported progress
	// (notifications/progress); sent between its tool_call and its
	// tool_result, at most the latest one while the consumer is busy.
	ToolProgress Type = "tool_progress"
	ToolResult   Type = "tool_result"
	// ToolTask: the server answered a call with a task (MCP Tasks,
	// a server's `tasks: auto`): sent when the task is created and at
	// each change of its status or message, before the call's
	// tool_result.
	ToolTask   Type = "tool_task"
	Error      Type = "error"
	SessionEnd Type = "session_end"
	// Authorization: the session's subject must authorize agenthost
	// for a server (OAuth); AuthURL is where to send that end user
	// (compose.OAuthOptions.RedirectURI).
	Authorization Type = "authorization"
)

// End reasons of a turn.
const (
	EndDone        = "done"
	EndMaxSteps    = "max_steps"
	EndError       = "error"
	EndInterrupted = "interrupted"
)

// Event is one thing that happened in a turn. Only the fields of its Type are
// set. Nothing in an Event ever carries a secure value.
type Event struct {
	Type      Type   `json:"type"`
	SessionID string `json:"sessionId,omitempty"`
	Step      int    `json:"step,omitempty"`

	// assistant, assistant_delta
	Text string `json:"text,omitempty"`

	// tool_call, approval, tool_result
	CallID      string          `json:"callId,omitempty"`
	ExposedName string          `json:"exposedName,omitempty"`
	Server      string          `json:"server,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`

	// approval: Approvers is how many distinct approvers the decision
	// required (0 for allow and deny), as in `tools --json`.
	Decision  string `json:"decision,omitempty"`
	Outcome   string `json:"outcome,omitempty"`
	Approvers *int   `json:"approvers,omitempty"`
	// Explanation says, for operators, why an ask was refused without
	// asking anyone and what to change (never sent to the model).
	Explanation string `json:"explanation,omitempty"`

	// approval_requested: the pending approval's id (the one
	// `agenthost approvals` and serve's approvals API vote on), when it
	// expires (RFC 3339, UTC) and the tool's effective risk level. Without
	// an id nobody can be asked, and Explanation says what to change.
	ApprovalID string `json:"approvalId,omitempty"`
	Deadline   string `json:"deadline,omitempty"`
	RiskLevel  string `json:"riskLevel,omitempty"`

	// tool_progress: the server's progress and total (absent when it gave
	// none), its message in Text, and in DurationMs how long the call has
	// run. All of it is the server's word, untrusted.
	Progress *float64 `json:"progress,omitempty"`
	Total    *float64 `json:"total,omitempty"`

	// tool_result
	IsError *bool         `json:"isError,omitempty"`
	Content []mcp.Content `json:"content,omitempty"`
	// Labels are the result's labels (sensitive, untrusted), sorted; the
	// model was told them (docs/events.md).
	Labels []string `json:"labels,omitempty"`

	// tool_task: the task's id, its status (working, input_required,
	// completed, failed, cancelled) and the server's status message.
	TaskID        string `json:"taskId,omitempty"`
	TaskStatus    string `json:"taskStatus,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`

	// authorization: the URL for the session's end user (never sent to
	// the model), and the session's subject.
	AuthURL string `json:"authUrl,omitempty"`
	Subject string `json:"subject,omitempty"`

	// error
	Kind  hosterr.Kind `json:"kind,omitempty"`
	Error string       `json:"error,omitempty"`

	// session_start: the model, the configured servers and the exposed
	// names of the tools the model is offered at the start of the turn.
	Model   string   `json:"model,omitempty"`
	Servers []Server `json:"servers,omitempty"`
	Tools   []string `json:"tools,omitempty"`

	// session_end: why the turn ended, the last assistant text (Result),
	// the turn's wall time, model requests (Steps) and token usage.
	Reason     string `json:"reason,omitempty"`
	Result     string `json:"result,omitempty"`
	DurationMs *int64 `json:"durationMs,omitempty"`
	// APIDurationMs is the part of DurationMs spent in model requests.
	APIDurationMs *int64       `json:"apiDurationMs,omitempty"`
	Steps         int          `json:"steps,omitempty"`
	Usage         *model.Usage `json:"usage,omitempty"`
}

// Server is one configured server in a session_start event.
type Server struct {
	Name   string               `json:"name"`
	Status mcpconn.ServerStatus `json:"status"`
	// Tools is how many of its tools the model is offered.
	Tools int `json:"tools"`
}

// Failed reports a tool_result that is an error (isError, or a call the host
// refused).
func (e Event) Failed() bool { return e.IsError != nil && *e.IsError }
