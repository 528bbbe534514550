package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Behaviour is the "x-test" object of a tool definition. It is stripped
// before the tool is served.
type Behaviour struct {
	InputRequired int             `json:"inputRequired,omitempty"`
	IsError       bool            `json:"isError,omitempty"`
	Text          *string         `json:"text,omitempty"`
	EchoSecure    bool            `json:"echoSecure,omitempty"`
	Sleep         string          `json:"sleep,omitempty"`
	Die           bool            `json:"die,omitempty"`
	Hang          bool            `json:"hang,omitempty"`
	ListChanged   string          `json:"listChanged,omitempty"`
	ErrorCode     int             `json:"errorCode,omitempty"`
	ErrorMessage  string          `json:"errorMessage,omitempty"`
	ErrorData     json.RawMessage `json:"errorData,omitempty"`
	Structured    json.RawMessage `json:"structured,omitempty"`
	Content       json.RawMessage `json:"content,omitempty"`
	// Meta is the result's _meta object (trust-annotations labels, say).
	Meta json.RawMessage `json:"meta,omitempty"`
	// Garbage is written in place of the JSON-RPC answer (raw text).
	Garbage string `json:"garbage,omitempty"`
	// Probe runs one of the probes (ProbeDial, ProbeSpawn,
	// ProbeAllocate) with the call's arguments and answers its outcome.
	Probe string `json:"probe,omitempty"`
	// Task runs the call as a task of the Tasks extension (task.go).
	Task *TaskBehaviour `json:"task,omitempty"`
	// Progress are notifications/progress sent, on stdio, for a call that
	// carries a progressToken: spread over Sleep, one at the start of each
	// of len(Progress) equal parts.
	Progress []ProgressStep `json:"progress,omitempty"`

	sleep time.Duration
}

// ProgressStep is one notifications/progress of a Behaviour.
type ProgressStep struct {
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
}

func (b *Behaviour) validate() error {
	if b.Sleep != "" {
		d, err := time.ParseDuration(b.Sleep)
		if err != nil || d < 0 {
			return fmt.Errorf("sleep %q is not a non-negative duration", b.Sleep)
		}
		b.sleep = d
	}
	if err := b.validateProbe(); err != nil {
		return err
	}
	if b.Task != nil {
		if err := b.Task.validate(); err != nil {
			return err
		}
	}
	if b.InputRequired < 0 {
		return fmt.Errorf("inputRequired must not be negative, got %d", b.InputRequired)
	}
	if len(b.Content) > 0 && !bytes.HasPrefix(bytes.TrimSpace(b.Content), []byte("[")) {
		return errors.New("content must be an array")
	}
	if len(b.Meta) > 0 && !bytes.HasPrefix(bytes.TrimSpace(b.Meta), []byte("{")) {
		return errors.New("meta must be an object")
	}
	return nil
}

// Sleep is how long a call of a tool with b sleeps (Behaviour.Sleep,
// read when the tools file was parsed).
func Sleep(b Behaviour) time.Duration { return b.sleep }

// TaskBehaviour is the "task" member of x-test: on a 2026-07-28 request
// that declares the Tasks extension, tools/call answers with a task handle,
// and the task advances one step per tasks/get, deterministically:
// Polls polls answer working, then the task asks for its next input (one
// elicitation at a time, Inputs in all, each answered with tasks/update),
// and after the last input and Polls more polls it completes with the
// tool's usual result (or fails with FailCode, or never ends with
// Forever). A declined input completes the task with isError. Message,
// when set, is the statusMessage of the working steps. Lag polls after an
// answer still show the answered request (an eventually consistent
// server). Decide are the inputs (1-based) that ask for a decision
// instead: a confirmation, one boolean "confirm", whose accepted answer is
// recorded as "confirm=<value>". With Notify the server offers
// subscriptions/listen for the task: it acknowledges the task's id, and
// while the task is listened to it also advances on its own, a step every
// taskStep, and sends each new state as notifications/tasks on the stream
// (it stops at a question, until it is answered, and at the end). A call of a task
// tool that does not declare the extension answers -32021. On a 2025-11-25
// connection the server offers the revision's form instead (capability
// tasks.requests.tools.call): a tools/call with params.task answers
// {task}, tasks/get the task without its result, tasks/result the result
// once it ended. A task of that form that is input_required asks its
// inputs during tasks/result, as the revision has it: an elicitation/create
// request to the client on the stream of tasks/result (the stdio or
// in-process connection, the SSE response over HTTP), tagged with the
// related task; each answer is taken as a tasks/update one would be, the
// task runs on to its next input or its end, and tasks/result answers
// then. An elicitation the client answers with an error fails the task.
type TaskBehaviour struct {
	Message        string `json:"message,omitempty"`
	Lag            int    `json:"lag,omitempty"`
	Inputs         int    `json:"inputs,omitempty"`
	Polls          int    `json:"polls,omitempty"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
	FailCode       int    `json:"failCode,omitempty"`
	Forever        bool   `json:"forever,omitempty"`
	Decide         []int  `json:"decide,omitempty"`
	Notify         bool   `json:"notify,omitempty"`
}

func (b *TaskBehaviour) validate() error {
	if b.Inputs < 0 || b.Polls < 0 || b.PollIntervalMs < 0 || b.Lag < 0 {
		return fmt.Errorf("task: inputs, polls, lag and pollIntervalMs must not be negative")
	}
	return nil
}

// Probes a tool's x-test "probe" runs with the call's arguments: what a
// sandbox test asks a real server process to try (docs of the sandbox e2e
// tests). Each answers what happened as text; a refusal is a tool error.
const (
	// ProbeDial opens a TCP connection to arguments.addr.
	ProbeDial = "dial"
	// ProbeSpawn has a shell start arguments.count background `sleep 60`
	// processes (they end with the server's tree).
	ProbeSpawn = "spawn"
	// ProbeAllocate allocates and touches arguments.mib MiB.
	ProbeAllocate = "allocate"
	// ProbeRead reads the file arguments.path and answers its content.
	ProbeRead = "read"
)

// probes run the probes by name.
var probes = map[string]func(ctx context.Context, args map[string]any) (string, bool){
	ProbeDial: func(ctx context.Context, args map[string]any) (string, bool) {
		addr, _ := args["addr"].(string)
		d := net.Dialer{Timeout: 2 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return "dial: " + err.Error(), true
		}
		_ = c.Close()
		return "connected", false
	},
	ProbeSpawn: func(ctx context.Context, args map[string]any) (string, bool) {
		// A shell forks: a Go server whose own thread creation failed
		// would crash instead of saying how far it got. It prints the
		// count after each background sleep it started.
		n, _ := args["count"].(float64)
		script := `i=0; while [ "$i" -lt "$1" ]; do sleep 60 </dev/null >/dev/null 2>&1 & i=$((i+1)); echo "$i"; done`
		out, err := exec.CommandContext(ctx, "sh", "-c", script, "sh", strconv.Itoa(int(n))).Output()
		lines := strings.Fields(string(out))
		started := "0"
		if len(lines) > 0 {
			started = lines[len(lines)-1]
		}
		if err != nil || started != strconv.Itoa(int(n)) {
			return fmt.Sprintf("started %s of %d: %v", started, int(n), err), true
		}
		return fmt.Sprintf("started %s of %d", started, int(n)), false
	},
	ProbeRead: func(_ context.Context, args map[string]any) (string, bool) {
		path, _ := args["path"].(string)
		b, err := os.ReadFile(path)
		if err != nil {
			return "read: " + err.Error(), true
		}
		return string(b), false
	},
	ProbeAllocate: func(_ context.Context, args map[string]any) (string, bool) {
		n, _ := args["mib"].(float64)
		b := make([]byte, int(n)<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("allocated %d MiB", len(b)>>20), false
	},
}

func (b *Behaviour) validateProbe() error {
	if _, ok := probes[b.Probe]; b.Probe != "" && !ok {
		return fmt.Errorf("unknown probe %q (dial, spawn, allocate or read)", b.Probe)
	}
	return nil
}

// RunProbe runs the probe name (Behaviour.Probe, a valid one) with a
// call's arguments: what happened as text, and whether that is a tool
// error.
func RunProbe(ctx context.Context, name string, args map[string]any) (text string, isError bool) {
	return probes[name](ctx, args)
}
