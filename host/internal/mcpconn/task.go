package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
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

// TaskUpdate is a state of the task a call was answered with, as the server
// reported it: at creation and at every change of status or message.
type TaskUpdate struct {
	TaskID string
	// Status is working, input_required, completed, failed or cancelled.
	Status string
	// StatusMessage is the server's message, cut to maxTaskMessageBytes.
	StatusMessage string
}

// Bounds of following a task.
const (
	// minTaskPoll and maxTaskPoll clamp the server's pollIntervalMs;
	// defaultTaskPoll stands in when it suggests none.
	minTaskPoll     = 100 * time.Millisecond
	maxTaskPoll     = 30 * time.Second
	defaultTaskPoll = time.Second
	// maxTaskInputs bounds the input requests one task may make.
	maxTaskInputs = 16
	// maxTaskMessageUpdates bounds the updates that change only the
	// status message, maxTaskUpdates all but the last (a chatty server
	// must not flood the turn's events).
	maxTaskMessageUpdates = 32
	maxTaskUpdates        = 128
	maxTaskMessageBytes   = 500
	maxTaskIDBytes        = 256
	// maxTaskQuestionBytes bounds the question of a decision an
	// approver is shown.
	maxTaskQuestionBytes = 1000
	// maxTaskReconnects bounds the reconnects while one task is followed.
	maxTaskReconnects = 3
	// taskListenAckTimeout bounds the wait for the server to acknowledge
	// a task's subscriptions/listen; taskListenBackstop is the tasks/get
	// of a listened task when no notification came (a lost one).
	taskListenAckTimeout = 2 * time.Second
	taskListenBackstop   = maxTaskPoll
	// taskCancelTimeout bounds the tasks/cancel sent when a call ends
	// early (its caller's context may be gone already).
	taskCancelTimeout = 5 * time.Second
)

// Task methods of the extension; mcp-go knows all but tasks/update.
const (
	methodTasksGet    = string(mcp.MethodTasksGet)
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = string(mcp.MethodTasksCancel)
	// methodTasksNotification is the extension's notifications/tasks,
	// sent on a subscriptions/listen stream that named the task.
	methodTasksNotification = "notifications/tasks"
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

// wireTask is the extension's Task, as CreateTaskResult, tasks/get and
// notifications/tasks carry it (DetailedTask: result, error and
// inputRequests by status).
type wireTask struct {
	ResultType     string         `json:"resultType"`
	TaskID         string         `json:"taskId"`
	Status         mcp.TaskStatus `json:"status"`
	StatusMessage  string         `json:"statusMessage"`
	PollIntervalMs *int64         `json:"pollIntervalMs"`
	// PollInterval is the 2025-11-25 revision's name of PollIntervalMs.
	PollInterval  *int64                     `json:"pollInterval"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        json.RawMessage            `json:"result"`
	Error         *mcp.JSONRPCErrorDetails   `json:"error"`
}

// isTaskHandle reports whether a tools/call result is a CreateTaskResult:
// the extension's (resultType "task") or the 2025-11-25 revision's ({task}
// and no content).
func isTaskHandle(result json.RawMessage) bool {
	var probe struct {
		ResultType string          `json:"resultType"`
		Task       json.RawMessage `json:"task"`
		Content    json.RawMessage `json:"content"`
	}
	if json.Unmarshal(result, &probe) != nil {
		return false
	}
	return probe.ResultType == "task" || (len(probe.Task) > 0 && probe.Task[0] == '{' && probe.Content == nil)
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

// taskStubResult is what mcp-go decodes instead of a task handle: the
// connection follows the task and returns its result instead.
var taskStubResult = json.RawMessage(`{"content":[]}`)

func taskProblem(format string, args ...any) *ProtocolError {
	return &ProtocolError{msg: "server sent a task that is not valid: " + fmt.Sprintf(format, args...)}
}

// parseTask reads a Task; want is the id it must have ("" at creation).
func parseTask(raw json.RawMessage, want string) (*wireTask, error) {
	var t wireTask
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, taskProblem("%v", err)
	}
	if t.PollIntervalMs == nil {
		t.PollIntervalMs = t.PollInterval
	}
	switch {
	case t.TaskID == "":
		return nil, taskProblem("no taskId")
	case len(t.TaskID) > maxTaskIDBytes:
		return nil, taskProblem("a taskId longer than %d bytes", maxTaskIDBytes)
	case want != "" && t.TaskID != want:
		return nil, taskProblem("taskId %q where %q was asked for", truncate(t.TaskID, 40), truncate(want, 40))
	}
	switch t.Status {
	case mcp.TaskStatusWorking, mcp.TaskStatusInputRequired, mcp.TaskStatusCompleted, mcp.TaskStatusFailed, mcp.TaskStatusCancelled:
	default:
		return nil, taskProblem("status %q", truncate(string(t.Status), 40))
	}
	return &t, nil
}

// pollInterval is the wait before the next tasks/get: the server's
// suggestion, within [minTaskPoll, maxTaskPoll].
func (t *wireTask) pollInterval() time.Duration {
	if t.PollIntervalMs == nil || *t.PollIntervalMs <= 0 {
		return defaultTaskPoll
	}
	ms := min(*t.PollIntervalMs, int64(maxTaskPoll/time.Millisecond))
	return max(time.Duration(ms)*time.Millisecond, minTaskPoll)
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
	t, err := parseTask(created, "")
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

func (f *taskFollower) follow(ctx context.Context, cl *client.Client, w *wireTransport, t *wireTask) (*mcp.CallToolResult, error) {
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
		watch    *taskWatch
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
				f.report(&wireTask{Status: mcp.TaskStatusCompleted, StatusMessage: t.StatusMessage})
			}
			return result, err
		}
		switch t.Status {
		case mcp.TaskStatusCompleted:
			return f.result(t)
		case mcp.TaskStatusFailed:
			if t.Error == nil {
				return nil, &CallError{Failure: FailProtocol, Err: taskProblem("status failed without an error")}
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
			defer func() { watch.close() }()
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
				watch.close()
				watch = nil
				continue
			}
			return nil, err
		}
		next, err := parseTask(raw, f.id)
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
func (f *taskFollower) next(ctx context.Context, cl *client.Client, w *wireTransport, t *wireTask, watch **taskWatch) (json.RawMessage, error) {
	wait := t.pollInterval()
	if wt := *watch; wt != nil {
		wait = taskListenBackstop
		if wt.fresh {
			// What changed before the stream was established was not
			// sent on it.
			wt.fresh = false
			wait = 0
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case raw := <-wt.updates:
			return raw, nil
		case <-wt.ended:
			// The server closed the stream: poll from here.
			wt.close()
			*watch = nil
		case <-timer.C:
		}
		return f.rpc(ctx, cl, w, methodTasksGet, nil)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
	}
	return f.rpc(ctx, cl, w, methodTasksGet, nil)
}

// listen opens a subscriptions/listen stream for the task's
// notifications/tasks on a 2026-07-28 connection, and returns it once the
// server acknowledged the task on it; nil (the task is polled) when the
// connection is of an earlier revision, the server refuses or ends the
// stream, or does not acknowledge the task within taskListenAckTimeout.
func (f *taskFollower) listen(ctx context.Context, cl *client.Client, w *wireTransport) *taskWatch {
	if !mcp.IsModernProtocol(cl.ProtocolVersion()) {
		return nil
	}
	wt, ok := f.c.taskWatches.add(f.id)
	if !ok {
		return nil
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(wt.ended)
		params := map[string]any{"notifications": map[string]any{"taskIds": []string{f.id}}}
		if _, err := f.request(lctx, cl, w, methodSubscriptionsListen, params, 0); err != nil && lctx.Err() == nil {
			f.c.logger.Debug("subscriptions/listen for a task ended", "task", truncate(f.id, 40), "err", err)
		}
	}()
	wt.stop = func() {
		cancel()
		<-done
		f.c.taskWatches.remove(f.id, wt)
	}
	wt.stopOnce = &sync.Once{}
	timer := time.NewTimer(taskListenAckTimeout)
	defer timer.Stop()
	select {
	case ok := <-wt.acked:
		if ok {
			wt.fresh = true
			return wt
		}
	case <-wt.ended:
	case <-timer.C:
	case <-ctx.Done():
	}
	wt.close()
	return nil
}

// methodSubscriptionsListen opens a notification stream (2026-07-28).
const methodSubscriptionsListen = string(mcp.MethodSubscriptionsListen)

// taskWatch is a followed task's subscriptions/listen stream: the
// notifications/tasks for it (the latest one not yet taken), whether the
// server acknowledged it, and the stream's end.
type taskWatch struct {
	updates chan json.RawMessage
	// acked says whether the server agreed to send the task's
	// notifications (once).
	acked   chan bool
	ackOnce sync.Once
	ended   chan struct{}
	// fresh: acknowledged, and the task not read since.
	fresh    bool
	stop     func()
	stopOnce *sync.Once
}

// answer takes the server's first answer to the subscription.
func (wt *taskWatch) answer(ok bool) { wt.ackOnce.Do(func() { wt.acked <- ok }) }

// close ends the stream and forgets the watch; nil and closed watches
// are left as they are.
func (wt *taskWatch) close() {
	if wt != nil && wt.stopOnce != nil {
		wt.stopOnce.Do(wt.stop)
	}
}

// taskWatches routes notifications/tasks and the acknowledgements of task
// subscriptions to the followers of the tasks they name. It holds one
// entry per task followed through a stream, so it is bounded by the calls
// in flight; a notification for no such task is dropped.
type taskWatches struct {
	mu      sync.Mutex
	watches map[string]*taskWatch
}

// add registers a watch for task id; false when one is registered (the
// same task followed twice is polled the second time).
func (r *taskWatches) add(id string) (*taskWatch, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.watches[id]; ok {
		return nil, false
	}
	if r.watches == nil {
		r.watches = map[string]*taskWatch{}
	}
	wt := &taskWatch{updates: make(chan json.RawMessage, 1), acked: make(chan bool, 1), ended: make(chan struct{})}
	r.watches[id] = wt
	return wt, true
}

func (r *taskWatches) remove(id string, wt *taskWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watches[id] == wt {
		delete(r.watches, id)
	}
}

// deliver takes a notification the connection read: notifications/tasks
// for a watched task (the watch keeps the latest), or an acknowledgement
// naming watched tasks. It runs on the connection's reader and never
// blocks.
func (r *taskWatches) deliver(method string, params map[string]any) {
	if method != methodTasksNotification && method != mcp.MethodNotificationSubscriptionsAcknowledged {
		return
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.watches) == 0 {
		return
	}
	if method == mcp.MethodNotificationSubscriptionsAcknowledged {
		var ack struct {
			Notifications struct {
				TaskIDs []string `json:"taskIds"`
			} `json:"notifications"`
		}
		if json.Unmarshal(raw, &ack) != nil {
			return
		}
		// The ack names the tasks the server agreed to; one that names
		// none refused the tasks whose streams wait for an answer (an
		// ack of the connection's own stream, made only as it connects,
		// at worst has them polled).
		if len(ack.Notifications.TaskIDs) == 0 {
			for _, wt := range r.watches {
				wt.answer(false)
			}
		}
		for _, id := range ack.Notifications.TaskIDs {
			if wt := r.watches[id]; wt != nil {
				wt.answer(true)
			}
		}
		return
	}
	var probe struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return
	}
	wt := r.watches[probe.TaskID]
	if wt == nil {
		return
	}
	select {
	case <-wt.updates: // superseded
	default:
	}
	wt.updates <- raw
}

// result is a completed task's CallToolResult.
func (f *taskFollower) result(t *wireTask) (*mcp.CallToolResult, error) {
	if len(t.Result) == 0 {
		return nil, &CallError{Failure: FailProtocol, Err: taskProblem("status completed without a result")}
	}
	result, err := mcp.ParseCallToolResult(&t.Result)
	if err != nil {
		return nil, &CallError{Failure: FailProtocol, Err: taskProblem("result: %v", err)}
	}
	return result, nil
}

// report tells the caller about a new state of the task.
func (f *taskFollower) report(t *wireTask) {
	u := TaskUpdate{TaskID: f.id, Status: string(t.Status), StatusMessage: truncate(t.StatusMessage, maxTaskMessageBytes)}
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
func (f *taskFollower) answer(ctx context.Context, cl *client.Client, w *wireTransport, t *wireTask) error {
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
	if _, err := f.rpc(ctx, cl, w, methodTasksUpdate, map[string]any{"inputResponses": responses}); err != nil {
		return err
	}
	for _, key := range keys {
		f.answered[key] = true
	}
	return nil
}

// fulfil answers one input request: a decision (decisionField) through
// CallRequest.Decide, the approval workflow, when set; other elicitation
// through the connection's handler (declined without one); agenthost
// answers no other kind.
func (f *taskFollower) fulfil(ctx context.Context, key string, ir mcp.InputRequest) (mcp.InputResponse, error) {
	if ir.Method != mcp.MethodElicitationCreate || ir.Elicitation == nil {
		return mcp.InputResponse{}, &CallError{Failure: FailServerError,
			Err: fmt.Errorf("task %s asks for %s, which agenthost does not answer", truncate(f.id, 40), ir.Method)}
	}
	decline := mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
	if field, ok := decisionField(ir.Elicitation); ok && f.req.Decide != nil {
		yes, err := f.req.Decide(ctx, TaskQuestion{TaskID: f.id, Key: truncate(key, maxTaskIDBytes), Message: truncate(ir.Elicitation.Message, maxTaskQuestionBytes)})
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
	if _, err := f.rpc(cctx, cl, w, methodTasksCancel, nil); err != nil {
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
	x.task = &taskRequest{method: method, params: params}
	req := mcp.GetTaskRequest{}
	req.Params.TaskId = f.id
	if _, err := cl.GetTask(x.bind(cctx), req); err != nil {
		return nil, classifyCallError(ctx, cctx, timeout, err)
	}
	raw := x.result
	if raw == nil {
		return nil, &CallError{Failure: FailProtocol, Err: taskProblem("%s had no result", method)}
	}
	return raw, nil
}

// TaskQuestion is an input request of a task that asks for a decision: a
// form elicitation whose requestedSchema asks for nothing (accept or
// decline) or for one boolean (a confirmation). The extension names no
// request type for a decision; these are the shapes that can mean only
// yes or no. Key and Message are the server's, cut to bounds.
type TaskQuestion struct {
	TaskID  string
	Key     string
	Message string
}

// decisionField reports whether an elicitation asks for a decision
// (TaskQuestion), and the name of its boolean ("" for none).
func decisionField(p *mcp.ElicitationParams) (string, bool) {
	if p.Mode != "" && p.Mode != mcp.ElicitationModeForm {
		return "", false
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return "", false
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string          `json:"type"`
			Enum json.RawMessage `json:"enum"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &schema) != nil || (schema.Type != "" && schema.Type != "object") {
		return "", false
	}
	switch len(schema.Properties) {
	case 0:
		return "", true
	case 1:
		for name, prop := range schema.Properties {
			if prop.Type == "boolean" && len(prop.Enum) == 0 {
				return name, true
			}
		}
	}
	return "", false
}

// taskRequest is the method and params the seam sends for a task
// request mcp-go sends as tasks/get.
type taskRequest struct {
	method string
	params map[string]any
}
