// Package taskwire owns the wire side of MCP Tasks (the
// io.modelcontextprotocol/tasks extension, and the 2025-11-25 revision's
// form): a Task as the server reports it and its checks (Parse), the poll
// interval, the task requests' methods, the decision an input request may
// ask for (DecisionField), and the routing of notifications/tasks to the
// followers of the tasks they name (Watches). Following a task (polling,
// answering, cancelling) is mcpconn's.
package taskwire

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// Update is a state of the task a call was answered with, as the server
// reported it: at creation and at every change of status or message.
type Update struct {
	TaskID string
	// Status is working, input_required, completed, failed or cancelled.
	Status string
	// StatusMessage is the server's message, cut to a bound (mcpconn).
	StatusMessage string
}

// Bounds of a task's wire form.
const (
	// MinPoll and MaxPoll clamp the server's pollIntervalMs; DefaultPoll
	// stands in when it suggests none.
	MinPoll     = 100 * time.Millisecond
	MaxPoll     = 30 * time.Second
	DefaultPoll = time.Second
	// MaxIDBytes bounds a taskId (and an input request's key).
	MaxIDBytes = 256
)

// Task methods of the extension; mcp-go knows all but tasks/update.
const (
	MethodGet    = string(mcp.MethodTasksGet)
	MethodUpdate = "tasks/update"
	MethodCancel = string(mcp.MethodTasksCancel)
	// MethodNotification is the extension's notifications/tasks,
	// sent on a subscriptions/listen stream that named the task.
	MethodNotification = "notifications/tasks"
)

// Task is the extension's Task, as CreateTaskResult, tasks/get and
// notifications/tasks carry it (DetailedTask: result, error and
// inputRequests by status).
type Task struct {
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

// IsHandle reports whether a tools/call result is a CreateTaskResult:
// the extension's (resultType "task") or the 2025-11-25 revision's ({task}
// and no content).
func IsHandle(result json.RawMessage) bool {
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

// StubResult is what mcp-go decodes instead of a task handle: the
// connection follows the task and returns its result instead.
var StubResult = json.RawMessage(`{"content":[]}`)

// Problem is the error of a task that is not valid.
func Problem(format string, args ...any) *wirecheck.ProtocolError {
	return wirecheck.Problem("server sent a task that is not valid: " + fmt.Sprintf(format, args...))
}

// Parse reads a Task; want is the id it must have ("" at creation).
func Parse(raw json.RawMessage, want string) (*Task, error) {
	var t Task
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, Problem("%v", err)
	}
	if t.PollIntervalMs == nil {
		t.PollIntervalMs = t.PollInterval
	}
	switch {
	case t.TaskID == "":
		return nil, Problem("no taskId")
	case len(t.TaskID) > MaxIDBytes:
		return nil, Problem("a taskId longer than %d bytes", MaxIDBytes)
	case want != "" && t.TaskID != want:
		return nil, Problem("taskId %q where %q was asked for", cut(t.TaskID, 40), cut(want, 40))
	}
	switch t.Status {
	case mcp.TaskStatusWorking, mcp.TaskStatusInputRequired, mcp.TaskStatusCompleted, mcp.TaskStatusFailed, mcp.TaskStatusCancelled:
	default:
		return nil, Problem("status %q", cut(string(t.Status), 40))
	}
	return &t, nil
}

// Wait is the wait before the next tasks/get: the server's
// suggestion, within [MinPoll, MaxPoll].
func (t *Task) Wait() time.Duration {
	if t.PollIntervalMs == nil || *t.PollIntervalMs <= 0 {
		return DefaultPoll
	}
	ms := min(*t.PollIntervalMs, int64(MaxPoll/time.Millisecond))
	return max(time.Duration(ms)*time.Millisecond, MinPoll)
}

// MethodSubscriptionsListen opens a notification stream (2026-07-28).
const MethodSubscriptionsListen = string(mcp.MethodSubscriptionsListen)

// Watch is a followed task's subscriptions/listen stream: the
// notifications/tasks for it (the latest one not yet taken), whether the
// server acknowledged it, and the stream's end.
type Watch struct {
	// Updates has the latest notifications/tasks for the task not yet
	// taken.
	Updates chan json.RawMessage
	// Acked says whether the server agreed to send the task's
	// notifications (once).
	Acked   chan bool
	ackOnce sync.Once
	// Ended is closed by the stream's owner when the stream ends.
	Ended chan struct{}
	// Fresh: acknowledged, and the task not read since.
	Fresh    bool
	stop     func()
	stopOnce *sync.Once
}

// answer takes the server's first answer to the subscription.
func (wt *Watch) answer(ok bool) { wt.ackOnce.Do(func() { wt.Acked <- ok }) }

// OnClose makes stop what Close runs (once): it ends the stream and
// forgets the watch.
func (wt *Watch) OnClose(stop func()) { wt.stop, wt.stopOnce = stop, &sync.Once{} }

// Close ends the stream and forgets the watch; nil and closed watches
// are left as they are.
func (wt *Watch) Close() {
	if wt != nil && wt.stopOnce != nil {
		wt.stopOnce.Do(wt.stop)
	}
}

// Watches routes notifications/tasks and the acknowledgements of task
// subscriptions to the followers of the tasks they name. It holds one
// entry per task followed through a stream, so it is bounded by the calls
// in flight; a notification for no such task is dropped.
type Watches struct {
	mu      sync.Mutex
	watches map[string]*Watch
}

// Add registers a watch for task id; false when one is registered (the
// same task followed twice is polled the second time).
func (r *Watches) Add(id string) (*Watch, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.watches[id]; ok {
		return nil, false
	}
	if r.watches == nil {
		r.watches = map[string]*Watch{}
	}
	wt := &Watch{Updates: make(chan json.RawMessage, 1), Acked: make(chan bool, 1), Ended: make(chan struct{})}
	r.watches[id] = wt
	return wt, true
}

// Remove forgets wt, the watch of task id.
func (r *Watches) Remove(id string, wt *Watch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watches[id] == wt {
		delete(r.watches, id)
	}
}

// Deliver takes a notification the connection read: notifications/tasks
// for a watched task (the watch keeps the latest), or an acknowledgement
// naming watched tasks. It runs on the connection's reader and never
// blocks.
func (r *Watches) Deliver(method string, params map[string]any) {
	if method != MethodNotification && method != mcp.MethodNotificationSubscriptionsAcknowledged {
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
	case <-wt.Updates: // superseded
	default:
	}
	wt.Updates <- raw
}

// Question is an input request of a task that asks for a decision: a
// form elicitation whose requestedSchema asks for nothing (accept or
// decline) or for one boolean (a confirmation). The extension names no
// request type for a decision; these are the shapes that can mean only
// yes or no. Key and Message are the server's, cut to bounds.
type Question struct {
	TaskID  string
	Key     string
	Message string
}

// DecisionField reports whether an elicitation asks for a decision
// (Question), and the name of its boolean ("" for none).
func DecisionField(p *mcp.ElicitationParams) (string, bool) {
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

// cut is s cut to n bytes, marked.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
