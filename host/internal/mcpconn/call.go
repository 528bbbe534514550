package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/secureparams"
)

// CallRequest is one tools/call.
type CallRequest struct {
	// Tool is the definition the call was decided for; its name is sent.
	Tool *secureparams.Tool
	// Arguments are sent as they are: a JSON object.
	Arguments json.RawMessage
	// Secure are the call's secureArguments; nil sends none.
	Secure *SecureArgs
	// Meta are the attempt's _meta fields (the trace context, the
	// idempotency key of a durable call); read-only: the map is sent as
	// it is, never changed.
	Meta map[string]any
	// OnTask, when set, is told each new state of the task a server
	// answered the call with (`tasks: auto`, task.go): its creation and
	// every change of status or message, at most a bounded number.
	OnTask func(TaskUpdate)
	// Task, when set, is the id of a task this call created earlier (a
	// durable turn resumed after the process stopped): the call is not
	// sent again, the task is followed.
	Task string
	// KeepTask, when set, is asked when ctx ended whether to leave the
	// task running rather than cancel it (a durable turn whose process
	// stops, which is resumed and follows the task then); taskTimeout and
	// a task that asks too much cancel it regardless.
	KeepTask func(ctx context.Context) bool
	// Decide, when set, answers a task's input request that asks for a
	// decision (TaskQuestion): true accepts it, false declines it. The
	// host asks the session's approvers. Without it a decision is
	// elicited like any other input request.
	Decide func(ctx context.Context, q TaskQuestion) (bool, error)
	// Progress, when set, asks the server for progress: each attempt is
	// sent with a progressToken of its own, and the server's
	// notifications/progress for it are handed to Progress while the
	// attempt runs, on the connection's reader: it must not block.
	Progress func(Progress)
}

// Progress is one notifications/progress of a running call, as the server
// sent it (untrusted): Total is 0 when the server gave none; Message is
// capped at maxProgressMessage runes.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// maxProgressMessage bounds the message of a Progress.
const maxProgressMessage = 200

// Attempt describes the connection a tools/call attempt goes on (see
// Conn.Attempt).
type Attempt struct {
	// SessionID is the MCP session id, when the transport has one.
	SessionID string
	// ProtocolVersion is the negotiated protocol version.
	ProtocolVersion string
}

// Failure says why a call failed; see CallError.
type Failure int

// The failures of a call.
const (
	// FailUnavailable: no connection (Err wraps ErrServerUnavailable).
	FailUnavailable Failure = iota + 1
	// FailCancelled: the caller's context ended (Err is its error).
	FailCancelled
	// FailTimeout: no answer within the server's callTimeout.
	FailTimeout
	// FailProtocol: the server's answer was not JSON-RPC (Err wraps a
	// *ProtocolError).
	FailProtocol
	// FailConnectionLost: the connection broke; the next call reconnects.
	FailConnectionLost
	// FailToolGone: the server answered that the tool is unknown and no
	// longer lists it (or lists it as not active).
	FailToolGone
	// FailSecureRejected: the server answered -32602 to the call's
	// secureArguments (Retry says the call may be sent once more with
	// freshly resolved values).
	FailSecureRejected
	// FailServerError: any other error answer (RPC is set when the server
	// answered with a JSON-RPC error).
	FailServerError
)

// Retry says how a failed call may be sent once more.
type Retry int

// The retries a failed call allows.
const (
	RetryNone Retry = iota
	// RetrySame: the server answered that the tool is unknown (-32601)
	// but still lists it once re-listed: send the same call again.
	RetrySame
	// RetryRenewed: the server rejected the call's secure values
	// (FailSecureRejected), an expired or revoked token, say: send it
	// again with values resolved afresh, bypassing any cache.
	RetryRenewed
)

// CallError is a failed call.
type CallError struct {
	Failure Failure
	// Timeout is the callTimeout that passed (FailTimeout).
	Timeout time.Duration
	// RPC is the server's JSON-RPC error, when it answered with one (for
	// a task: the error its failed status carried).
	RPC *RPCError
	// Task is the id of the task the server answered the call with, when
	// it did: the call ran (or runs) on the server, and is not re-sent.
	Task string
	// Retry says whether the caller may send the call once more, and how
	// (RetryNone: not).
	Retry Retry
	// Err is the cause.
	Err error
}

// Error is the cause's text.
func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// RPCError is the JSON-RPC error a server answered a tools/call with, as
// the server sent it (mcp-go would keep the code and message only).
type RPCError struct {
	Code    int
	Message string
	Data    any
}

func newRPCError(d *mcp.JSONRPCErrorDetails) *RPCError {
	return &RPCError{Code: d.Code, Message: d.Message, Data: d.Data}
}

// Error says the code and the server's message.
func (e *RPCError) Error() string { return fmt.Sprintf("server error %d: %s", e.Code, e.Message) }

// Unwrap is mcp-go's error for the code (mcp.ErrMethodNotFound, ...), so
// errors.Is works as on mcp-go's own errors.
func (e *RPCError) Unwrap() error {
	d := mcp.JSONRPCErrorDetails{Code: e.Code, Message: e.Message, Data: e.Data}
	return d.AsError()
}

// RequiredExtensions are the extension ids a -32021 answer's data says the
// server requires (SEP-3221: data.requiredCapabilities.extensions), at
// most five, each cut to 100 bytes, sorted; nil when there are none. An
// answer without that data (Toolbox's names its id in the message only)
// gives the known secure-parameter ids its message names.
func (e *RPCError) RequiredExtensions() []string {
	if e == nil {
		return nil
	}
	if e.Data == nil {
		var ids []string
		for _, id := range config.KnownSecureParamsExtensions {
			if strings.Contains(e.Message, id) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	b, err := json.Marshal(e.Data)
	if err != nil {
		return nil
	}
	var data struct {
		RequiredCapabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"requiredCapabilities"`
	}
	if json.Unmarshal(b, &data) != nil {
		return nil
	}
	ids := make([]string, 0, len(data.RequiredCapabilities.Extensions))
	for id := range data.RequiredCapabilities.Extensions {
		ids = append(ids, truncate(id, 100))
	}
	slices.Sort(ids)
	if len(ids) > 5 {
		ids = ids[:5]
	}
	return ids
}

// defaultCallTimeout bounds a call when the server's callTimeout is unset.
const defaultCallTimeout = 60 * time.Second

// callTimeout is how long a call waits for the server's answer.
func (c *Conn) callTimeout() time.Duration {
	if c.cfg.CallTimeout > 0 {
		return c.cfg.CallTimeout
	}
	return defaultCallTimeout
}

// Lookup returns the server's snapshot and the named tool in it,
// connecting first when there is no connection and re-listing once when
// the tool is not listed; the tool is nil when the server does not list
// it. An error is a failed connect or re-listing.
func (c *Conn) Lookup(ctx context.Context, tool string) (*ServerSnapshot, *CatalogTool, error) {
	if err := c.Connect(ctx); err != nil {
		return nil, nil, err
	}
	snap := c.Snapshot()
	if ct := snap.Tool(tool); ct != nil {
		return snap, ct, nil
	}
	if err := c.Refresh(ctx); err != nil {
		return nil, nil, err
	}
	snap = c.Snapshot()
	return snap, snap.Tool(tool), nil
}

// Attempt describes the connection the next tools/call attempt goes on:
// its MCP session id and negotiated protocol version (empty while there is
// no connection).
func (c *Conn) Attempt() Attempt {
	c.mu.Lock()
	cl := c.client
	c.mu.Unlock()
	if cl == nil {
		return Attempt{}
	}
	return Attempt{SessionID: cl.GetSessionId(), ProtocolVersion: cl.ProtocolVersion()}
}

// Call sends one tools/call attempt. It connects when there is no
// connection and drops a connection that broke (the next call
// reconnects). A failed attempt that may be sent once more says so in its
// *CallError's Retry: after an unknown-tool answer (-32601) for a tool the
// server still lists once re-listed, or after the server rejected the
// secure values. It returns the result and the secure values that went
// with it, or a *CallError.
func (c *Conn) Call(ctx context.Context, req CallRequest) (*mcp.CallToolResult, *SecureArgs, error) {
	if req.Task != "" {
		result, err := c.resumeTask(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		return result, req.Secure, nil
	}
	cl, w, err := c.connect(ctx)
	if err != nil {
		return nil, nil, &CallError{Failure: FailUnavailable, Err: err}
	}
	result, err := c.sendCall(ctx, cl, w, req)
	if err == nil {
		return result, req.Secure, nil
	}
	cerr := err.(*CallError)
	if cerr.Failure == FailConnectionLost {
		c.dropClient(cl, cerr.Err)
	}
	if cerr.RPC == nil || cerr.Task != "" {
		return nil, nil, cerr
	}
	switch code := cerr.RPC.Code; code {
	case mcp.METHOD_NOT_FOUND, mcp.INVALID_PARAMS:
		// Either the tool is gone (servers answer -32601 or -32602) or,
		// for a call with secureArguments, the values were rejected.
		if rerr := c.Refresh(ctx); rerr != nil {
			c.logger.Warn("refresh after unknown-tool answer failed", "err", rerr)
		}
		if ct := c.Snapshot().Tool(req.Tool.Name); ct == nil || ct.Status != ToolActive {
			cerr.Failure = FailToolGone
			return nil, nil, cerr
		}
		switch {
		case code == mcp.INVALID_PARAMS && req.Secure != nil:
			cerr.Failure, cerr.Retry = FailSecureRejected, RetryRenewed
		case code == mcp.METHOD_NOT_FOUND:
			cerr.Retry = RetrySame
		}
	}
	return nil, nil, cerr
}

// sendCall sends one tools/call on cl, with req.Meta in its _meta (mcp-go
// adds its own fields); its error is a *CallError.
func (c *Conn) sendCall(ctx context.Context, cl *client.Client, w *wireTransport, req CallRequest) (*mcp.CallToolResult, error) {
	timeout := c.callTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	call := mcp.CallToolRequest{}
	call.Params.Name = req.Tool.Name
	call.Params.Arguments = req.Arguments
	if len(req.Meta) > 0 {
		call.Params.Meta = &mcp.Meta{AdditionalFields: req.Meta}
	}
	if req.Progress != nil {
		token, stop := c.progress.add(req.Progress)
		defer stop()
		if call.Params.Meta == nil {
			call.Params.Meta = &mcp.Meta{}
		}
		call.Params.Meta.ProgressToken = token
	}
	if legacyTaskCall(cl, c.TasksOn(), req.Tool) {
		call.Params.Task = &mcp.TaskParams{}
	}
	var x *exchange
	if tasks, headerTool := c.TasksOn(), c.paramHeaderTool(w, req.Tool.Name); req.Secure != nil || tasks || headerTool != nil {
		x = &exchange{method: string(mcp.MethodToolsCall), secure: req.Secure, headerTool: headerTool, tasks: tasks}
		cctx = x.bind(cctx)
	}
	result, err := cl.CallTool(cctx, call)
	if err != nil {
		return nil, classifyCallError(ctx, cctx, timeout, err)
	}
	if x != nil && x.tasks {
		if created := x.result; created != nil {
			// The call's callTimeout bounded its answer; the task has a
			// bound of its own.
			return c.followTask(ctx, cl, w, req, created)
		}
	}
	return result, nil
}

// classifyCallError maps the error of a request sent under cctx (ctx with
// the timeout) to a *CallError.
func classifyCallError(ctx, cctx context.Context, timeout time.Duration, err error) *CallError {
	var (
		rpc  *RPCError
		perr *ProtocolError
	)
	switch {
	case ctx.Err() != nil:
		return &CallError{Failure: FailCancelled, Err: ctx.Err()}
	case cctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return &CallError{Failure: FailTimeout, Timeout: timeout, Err: err}
	case errors.As(err, &perr):
		return &CallError{Failure: FailProtocol, Err: err}
	case errors.As(err, &rpc):
		// Before the connection check: mcp-go wraps the seam's error in
		// a transport error.
		return &CallError{Failure: FailServerError, RPC: rpc, Err: rpc}
	case isConnectionFailure(err):
		return &CallError{Failure: FailConnectionLost, Err: err}
	}
	return &CallError{Failure: FailServerError, Err: err}
}
