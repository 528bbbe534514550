package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/outbound"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/taskwire"
	"github.com/agenthost/agenthost/host/secureparams"
)

// MCP Tasks, the io.modelcontextprotocol/tasks extension of the 2026-07-28
// protocol. With a server's `tasks: auto` the connection declares the
// extension, and a tools/call the server answers with a task handle
// (resultType "task") is followed here to its end: on the task's
// subscriptions/listen stream (notifications/tasks) when the server
// acknowledges one, else with tasks/get every poll interval the server
// suggests (bounded), the task's inputRequests answered
// (a decision through CallRequest.Decide, the approval workflow; any other
// through the connection's elicitation handler) and sent with tasks/update,
// and tasks/cancel when the caller gives up (unless CallRequest.KeepTask)
// or taskTimeout passes; CallRequest.Task follows a task an earlier call
// created (a resumed durable turn). The
// caller of Call sees the task's final CallToolResult, or a *CallError that
// names the task; it never re-sends a call that created a task.
//
// The task requests go through mcp-go's client (its _meta, request ids and
// cancellation) as a tasks/get of an exchange that names the method and
// params to send (wireTransport rewrites them), so that tasks/update, which
// mcp-go does not know, and the extension's result shapes, which it would
// misread, pass through raw.

// TaskUpdate is a state of the task a call was answered with, as the
// server reported it: at creation and at every change of status or message.
type TaskUpdate = taskwire.Update

// TaskQuestion is an input request of a task that asks for a decision
// (taskwire.Question).
type TaskQuestion = taskwire.Question

// Bounds of following a task.
const (
	// maxTaskInputs bounds the input requests one task may make.
	maxTaskInputs = 16
	// maxTaskMessageUpdates bounds the updates that change only the
	// status message, maxTaskUpdates all but the last (a chatty server
	// must not flood the turn's events).
	maxTaskMessageUpdates = 32
	maxTaskUpdates        = 128
	maxTaskMessageBytes   = 500
	// maxTaskQuestionBytes bounds the question of a decision an
	// approver is shown.
	maxTaskQuestionBytes = 1000
	// maxTaskReconnects bounds the reconnects while one task is followed.
	maxTaskReconnects = 3
	// taskListenAckTimeout bounds the wait for the server to acknowledge
	// a task's subscriptions/listen; taskListenBackstop is the tasks/get
	// of a listened task when no notification came (a lost one).
	taskListenAckTimeout = 2 * time.Second
	taskListenBackstop   = taskwire.MaxPoll
	// taskCancelTimeout bounds the tasks/cancel sent when a call ends
	// early (its caller's context may be gone already).
	taskCancelTimeout = 5 * time.Second
)

// TasksOn reports the server's `tasks: auto`: only then may a call be
// answered with a task (and a task ask questions).
func (c *Conn) TasksOn() bool { return c.cfg.Tasks == config.TasksAuto }

// taskTimeout bounds a call answered with a task.
func (c *Conn) taskTimeout() time.Duration {
	if c.cfg.TaskTimeout > 0 {
		return c.cfg.TaskTimeout
	}
	return config.DefaultTaskTimeout
}

// The 2025-11-25 revision's form of tasks (its basic/utilities/tasks):
// with `tasks: auto`, a connection of that revision sends a tools/call
// with params.task when the server declares tasks.requests.tools.call and
// the tool's execution.taskSupport is optional or required; the answer's
// task is polled with tasks/get (its pollInterval), and once it ends, or
// asks for input (which the server then requests during tasks/result, on
// the connection's elicitation path), tasks/result has its result.

// legacyTaskCall reports whether a call is sent task-augmented in the
// 2025-11-25 form.
func legacyTaskCall(cl *client.Client, on bool, tool *secureparams.Tool) bool {
	if !on || mcp.IsModernProtocol(cl.ProtocolVersion()) {
		return false
	}
	caps := cl.GetServerCapabilities()
	if caps.Tasks == nil || caps.Tasks.Requests == nil || caps.Tasks.Requests.Tools == nil || caps.Tasks.Requests.Tools.Call == nil {
		return false
	}
	var def struct {
		Execution struct {
			TaskSupport mcp.TaskSupport `json:"taskSupport"`
		} `json:"execution"`
	}
	if json.Unmarshal(tool.Raw, &def) != nil {
		return false
	}
	return def.Execution.TaskSupport == mcp.TaskSupportOptional || def.Execution.TaskSupport == mcp.TaskSupportRequired
}

// legacyResult is tasks/result of a 2025-11-25 task: the call's result, or
// the task's error. It blocks until the task ends (bounded by ctx).
func (f *taskFollower) legacyResult(ctx context.Context, cl *client.Client) (*mcp.CallToolResult, error) {
	req := mcp.TaskResultRequest{}
	req.Params.TaskId = f.id
	res, err := cl.TaskResult(ctx, req)
	if err != nil {
		return nil, classifyCallError(ctx, ctx, f.c.taskTimeout(), err)
	}
	return &mcp.CallToolResult{Result: res.Result, Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}, nil
}

// taskFollower follows one call's task.
type taskFollower struct {
	c        *Conn
	req      CallRequest
	id       string
	last     TaskUpdate
	updates  int             // updates reported
	messages int             // updates that changed only the message
	answered map[string]bool // inputRequests keys answered
	inputs   int
	// legacy: the 2025-11-25 form (the result comes from tasks/result).
	legacy bool
}

// followTask follows the task created answers a call with to its end; its
// error is a *CallError naming the task.
func (c *Conn) followTask(ctx context.Context, cl *client.Client, w *wireTransport, req CallRequest, created json.RawMessage) (*mcp.CallToolResult, error) {
	legacy := !mcp.IsModernProtocol(cl.ProtocolVersion())
	if legacy {
		var handle struct {
			Task json.RawMessage `json:"task"`
		}
		if json.Unmarshal(created, &handle) == nil && len(handle.Task) > 0 {
			created = handle.Task
		}
	}
	t, err := taskwire.Parse(created, "")
	if err != nil {
		return nil, &CallError{Failure: FailProtocol, Err: err}
	}
	f := &taskFollower{c: c, req: req, id: t.TaskID, answered: map[string]bool{}, legacy: legacy}
	result, err := f.follow(ctx, cl, w, t)
	if err != nil {
		var cerr *CallError
		if !errors.As(err, &cerr) {
			cerr = &CallError{Failure: FailServerError, Err: err}
		}
		cerr.Task = f.id
		return nil, cerr
	}
	return result, nil
}

// resumeTask follows req.Task, a task an earlier call created.
func (c *Conn) resumeTask(ctx context.Context, req CallRequest) (*mcp.CallToolResult, error) {
	cl, w, err := c.connect(ctx)
	if err != nil {
		return nil, &CallError{Failure: FailUnavailable, Task: req.Task, Err: err}
	}
	created, err := json.Marshal(map[string]string{"taskId": req.Task, "status": string(mcp.TaskStatusWorking), "statusMessage": "resumed"})
	if err != nil {
		return nil, &CallError{Failure: FailServerError, Task: req.Task, Err: err}
	}
	return c.followTask(ctx, cl, w, req, created)
}

func (f *taskFollower) follow(ctx context.Context, cl *client.Client, w *wireTransport, t *taskwire.Task) (*mcp.CallToolResult, error) {
	timeout := f.c.taskTimeout()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// ended is the error of a call whose context or taskTimeout ended:
	// the task is cancelled, as the caller no longer waits for it (but
	// for KeepTask, when the caller's context ended: its resumed turn
	// will).
	ended := func() error {
		if ctx.Err() == nil || f.req.KeepTask == nil || !f.req.KeepTask(ctx) {
			f.cancel(ctx, cl, w)
		}
		if err := ctx.Err(); err != nil {
			return &CallError{Failure: FailCancelled, Err: err}
		}
		return &CallError{Failure: FailTimeout, Timeout: timeout,
			Err: fmt.Errorf("task %s did not finish within %s (taskTimeout)", truncate(f.id, 40), timeout)}
	}
	reconnects := 0
	// watch is the task's subscriptions/listen stream, when the server
	// acknowledged one (listened: it was tried).
	var (
		watch    *taskwire.Watch
		listened bool
	)
	f.report(t)
	for {
		if f.legacy && (t.Status == mcp.TaskStatusCompleted || t.Status == mcp.TaskStatusFailed || t.Status == mcp.TaskStatusInputRequired) {
			result, err := f.legacyResult(tctx, cl)
			if err != nil && tctx.Err() != nil {
				return nil, ended()
			}
			if err == nil {
				f.report(&taskwire.Task{Status: mcp.TaskStatusCompleted, StatusMessage: t.StatusMessage})
			}
			return result, err
		}
		switch t.Status {
		case mcp.TaskStatusCompleted:
			return f.result(t)
		case mcp.TaskStatusFailed:
			if t.Error == nil {
				return nil, &CallError{Failure: FailProtocol, Err: taskwire.Problem("status failed without an error")}
			}
			rpc := newRPCError(t.Error)
			return nil, &CallError{Failure: FailServerError, RPC: rpc, Err: fmt.Errorf("task %s failed: %w", truncate(f.id, 40), rpc)}
		case mcp.TaskStatusCancelled:
			return nil, &CallError{Failure: FailServerError, Err: fmt.Errorf("task %s was cancelled by the server: %s", truncate(f.id, 40), truncate(t.StatusMessage, maxTaskMessageBytes))}
		case mcp.TaskStatusInputRequired:
			if err := f.answer(tctx, cl, w, t); err != nil {
				if tctx.Err() != nil {
					return nil, ended()
				}
				f.cancel(ctx, cl, w)
				return nil, err
			}
		}
		if watch == nil && !listened {
			listened = true
			watch = f.listen(tctx, cl, w)
			defer func() { watch.Close() }()
		}
		raw, err := f.next(tctx, cl, w, t, &watch)
		if err != nil {
			var cerr *CallError
			switch {
			case tctx.Err() != nil:
				return nil, ended()
			case errors.As(err, &cerr) && cerr.Failure == FailConnectionLost && reconnects < maxTaskReconnects:
				// The task lives on the server: poll it again on a new
				// connection rather than call again.
				reconnects++
				f.c.dropClient(cl, cerr.Err)
				ncl, nw, derr := f.c.connect(tctx)
				if derr != nil {
					return nil, &CallError{Failure: FailUnavailable, Err: derr}
				}
				cl, w = ncl, nw
				// The stream went with the connection: poll.
				watch.Close()
				watch = nil
				continue
			}
			return nil, err
		}
		next, err := taskwire.Parse(raw, f.id)
		if err != nil {
			return nil, &CallError{Failure: FailProtocol, Err: err}
		}
		t = next
		f.report(t)
	}
}

// next waits for the task's next state and returns it raw: the next
// notifications/tasks of its stream, or else a tasks/get after the poll
// interval (the backstop interval while a stream is open, at once when the
// stream has just been acknowledged or has ended).
func (f *taskFollower) next(ctx context.Context, cl *client.Client, w *wireTransport, t *taskwire.Task, watch **taskwire.Watch) (json.RawMessage, error) {
	wait := t.Wait()
	if wt := *watch; wt != nil {
		wait = taskListenBackstop
		if wt.Fresh {
			// What changed before the stream was established was not
			// sent on it.
			wt.Fresh = false
			wait = 0
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case raw := <-wt.Updates:
			return raw, nil
		case <-wt.Ended:
			// The server closed the stream: poll from here.
			wt.Close()
			*watch = nil
		case <-timer.C:
		}
		return f.rpc(ctx, cl, w, taskwire.MethodGet, nil)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
	}
	return f.rpc(ctx, cl, w, taskwire.MethodGet, nil)
}

// listen opens a subscriptions/listen stream for the task's
// notifications/tasks on a 2026-07-28 connection, and returns it once the
// server acknowledged the task on it; nil (the task is polled) when the
// connection is of an earlier revision, the server refuses or ends the
// stream, or does not acknowledge the task within taskListenAckTimeout.
func (f *taskFollower) listen(ctx context.Context, cl *client.Client, w *wireTransport) *taskwire.Watch {
	if !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		return nil
	}
	wt, ok := f.c.taskWatches.Add(f.id)
	if !ok {
		return nil
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(wt.Ended)
		params := map[string]any{"notifications": map[string]any{"taskIds": []string{f.id}}}
		if _, err := f.request(lctx, cl, w, taskwire.MethodSubscriptionsListen, params, 0); err != nil && lctx.Err() == nil {
			f.c.logger.Debug("subscriptions/listen for a task ended", "task", truncate(f.id, 40), "err", err)
		}
	}()
	wt.OnClose(func() {
		cancel()
		<-done
		f.c.taskWatches.Remove(f.id, wt)
	})
	timer := time.NewTimer(taskListenAckTimeout)
	defer timer.Stop()
	select {
	case ok := <-wt.Acked:
		if ok {
			wt.Fresh = true
			return wt
		}
	case <-wt.Ended:
	case <-timer.C:
	case <-ctx.Done():
	}
	wt.Close()
	return nil
}

// result is a completed task's CallToolResult.
func (f *taskFollower) result(t *taskwire.Task) (*mcp.CallToolResult, error) {
	if len(t.Result) == 0 {
		return nil, &CallError{Failure: FailProtocol, Err: taskwire.Problem("status completed without a result")}
	}
	result, err := mcp.ParseCallToolResult(&t.Result)
	if err != nil {
		return nil, &CallError{Failure: FailProtocol, Err: taskwire.Problem("result: %v", err)}
	}
	return result, nil
}

// report tells the caller about a new state of the task.
func (f *taskFollower) report(t *taskwire.Task) {
	u := taskwire.Update{TaskID: f.id, Status: string(t.Status), StatusMessage: truncate(t.StatusMessage, maxTaskMessageBytes)}
	if u == f.last {
		return
	}
	if !t.Status.IsTerminal() {
		if f.updates >= maxTaskUpdates-1 {
			return
		}
		if u.Status == f.last.Status {
			if f.messages >= maxTaskMessageUpdates {
				return
			}
			f.messages++
		}
	}
	f.updates++
	f.last = u
	f.c.logger.Debug("task", "task", truncate(f.id, 40), "status", u.Status)
	if f.req.OnTask != nil {
		f.req.OnTask(u)
	}
}

// answer fulfils the input requests of t not answered yet and sends the
// responses with tasks/update. inputRequests is a snapshot of what is
// outstanding, so a key seen again is not asked again.
func (f *taskFollower) answer(ctx context.Context, cl *client.Client, w *wireTransport, t *taskwire.Task) error {
	keys := make([]string, 0, len(t.InputRequests))
	for key := range t.InputRequests {
		if !f.answered[key] {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	responses := make(mcp.InputResponses, len(keys))
	for _, key := range keys {
		if f.inputs >= maxTaskInputs {
			return &CallError{Failure: FailServerError, Err: fmt.Errorf("task %s asked for more than %d inputs", truncate(f.id, 40), maxTaskInputs)}
		}
		f.inputs++
		var ir mcp.InputRequest
		if err := json.Unmarshal(t.InputRequests[key], &ir); err != nil {
			return &CallError{Failure: FailServerError, Err: fmt.Errorf("task %s input request %q: %w", truncate(f.id, 40), truncate(key, 40), err)}
		}
		resp, err := f.fulfil(ctx, key, ir)
		if err != nil {
			return err
		}
		responses[key] = resp
	}
	if _, err := f.rpc(ctx, cl, w, taskwire.MethodUpdate, map[string]any{"inputResponses": responses}); err != nil {
		return err
	}
	for _, key := range keys {
		f.answered[key] = true
	}
	return nil
}

// fulfil answers one input request: a decision (taskwire.DecisionField) through
// CallRequest.Decide, the approval workflow, when set; other elicitation
// through the connection's handler (declined without one); agenthost
// answers no other kind.
func (f *taskFollower) fulfil(ctx context.Context, key string, ir mcp.InputRequest) (mcp.InputResponse, error) {
	if ir.Method != mcp.MethodElicitationCreate || ir.Elicitation == nil {
		return mcp.InputResponse{}, &CallError{Failure: FailServerError,
			Err: fmt.Errorf("task %s asks for %s, which agenthost does not answer", truncate(f.id, 40), ir.Method)}
	}
	decline := mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
	if field, ok := taskwire.DecisionField(ir.Elicitation); ok && f.req.Decide != nil {
		yes, err := f.req.Decide(ctx, TaskQuestion{TaskID: f.id, Key: truncate(key, taskwire.MaxIDBytes), Message: truncate(ir.Elicitation.Message, maxTaskQuestionBytes)})
		if err != nil {
			if ctx.Err() != nil {
				return mcp.InputResponse{}, ctx.Err()
			}
			return mcp.InputResponse{}, &CallError{Failure: FailServerError, Err: fmt.Errorf("task %s: deciding its question: %w", truncate(f.id, 40), err)}
		}
		if !yes {
			return mcp.NewElicitationInputResponse(decline), nil
		}
		content := map[string]any{}
		if field != "" {
			content[field] = true
		}
		return mcp.NewElicitationInputResponse(mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: content}}), nil
	}
	if f.c.elicitation == nil {
		return mcp.NewElicitationInputResponse(decline), nil
	}
	res, err := f.c.elicitation.Elicit(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  *ir.Elicitation,
	})
	if err != nil {
		if ctx.Err() != nil {
			return mcp.InputResponse{}, ctx.Err()
		}
		return mcp.InputResponse{}, &CallError{Failure: FailServerError, Err: fmt.Errorf("task %s: answering its input request: %w", truncate(f.id, 40), err)}
	}
	if res == nil {
		res = &decline
	}
	return mcp.NewElicitationInputResponse(*res), nil
}

// cancel sends tasks/cancel, bounded by taskCancelTimeout also when ctx
// has ended; a failure is logged (cancellation is cooperative anyway).
func (f *taskFollower) cancel(ctx context.Context, cl *client.Client, w *wireTransport) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
	defer stop()
	if _, err := f.rpc(cctx, cl, w, taskwire.MethodCancel, nil); err != nil {
		f.c.logger.Warn("tasks/cancel failed", "task", truncate(f.id, 40), "err", err)
	}
}

// rpc sends one task request (params beside taskId) and returns its raw
// result; the error is a *CallError. Each request is bounded by the
// server's callTimeout.
func (f *taskFollower) rpc(ctx context.Context, cl *client.Client, w *wireTransport, method string, params map[string]any) (json.RawMessage, error) {
	all := map[string]any{"taskId": f.id}
	for k, v := range params {
		all[k] = v
	}
	return f.request(ctx, cl, w, method, all, f.c.callTimeout())
}

// request sends one request of the Tasks seam with params as they are,
// bounded by timeout (0: by ctx only, a stream).
func (f *taskFollower) request(ctx context.Context, cl *client.Client, w *wireTransport, method string, params map[string]any, timeout time.Duration) (json.RawMessage, error) {
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	x := &exchange{method: string(mcp.MethodTasksGet)}
	x.task = &outbound.TaskRequest{Method: method, Params: params}
	req := mcp.GetTaskRequest{}
	req.Params.TaskId = f.id
	if _, err := cl.GetTask(x.bind(cctx), req); err != nil {
		return nil, classifyCallError(ctx, cctx, timeout, err)
	}
	raw := x.result
	if raw == nil {
		return nil, &CallError{Failure: FailProtocol, Err: taskwire.Problem("%s had no result", method)}
	}
	return raw, nil
}
