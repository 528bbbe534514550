// Package ccstream owns the Claude Code shape of a turn's events: it writes
// host.Event values as the JSON lines `claude -p --output-format
// stream-json` prints (the SDKMessage types of the Claude Agent SDK), or
// the result alone as `--output-format json` prints it, so that scripts
// written for Claude Code read agenthost's `run` output. The mapping is
// described in docs/events.md.
//
// Events without a Claude Code counterpart (approval_requested, approval,
// error, authorization, tool_task) are written as agenthost's own event objects, whose
// "type" no Claude Code message uses, so such a consumer skips them.
package ccstream

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// Options are what the events do not say.
type Options struct {
	// CWD is the working directory reported in system/init.
	CWD string
	// PermissionMode is the Claude Code permission mode the run maps to
	// (default, acceptEdits, plan, bypassPermissions, dontAsk).
	PermissionMode string
	// Prices are the per-model token prices (llm.prices) for
	// total_cost_usd.
	Prices map[string]config.Price
	// IncludePartial writes stream_event lines for streamed text
	// (--include-partial-messages).
	IncludePartial bool
	// ResultOnly writes the result line alone, as `claude -p
	// --output-format json` prints it: the turn's other lines are followed
	// (for the denials, errors and model the result reports) but not
	// written.
	ResultOnly bool
}

// Denial is one call the policy refused, as result.permission_denials
// lists it.
type Denial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// Writer writes one session's events. It is not safe for concurrent use
// (a turn's events arrive one at a time).
type Writer struct {
	enc  *json.Encoder // every line but the result (io.Discard with ResultOnly)
	res  *json.Encoder // the result line
	opts Options

	model string
	// per turn
	msgID   string // the message id of the current step
	msgStep int
	partial bool // a streamed text block is open
	calls   map[string]call
	denials []Denial
	errors  []string
	// partialSession is the session of the open streamed block.
	partialSession string
}

type call struct {
	name  string
	input json.RawMessage
}

// New returns a Writer writing to w.
func New(w io.Writer, opts Options) *Writer {
	res := json.NewEncoder(w)
	res.SetEscapeHTML(false)
	enc := res
	if opts.ResultOnly {
		enc = json.NewEncoder(io.Discard)
	}
	return &Writer{enc: enc, res: res, opts: opts, calls: map[string]call{}}
}

// ToolName is the name a Claude Code consumer knows an MCP tool by:
// mcp__SERVER__TOOL (the same name --allowedTools patterns match).
func ToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

// toolName is the name of the tool of e: its server's and tool's names
// when known, else the name the model used.
func toolName(e host.Event) string {
	if e.Server != "" && e.Tool != "" {
		return ToolName(e.Server, e.Tool)
	}
	return e.ExposedName
}

// Event writes the lines of e. The first error writing stops nothing; it
// is returned so that a caller may stop the turn.
func (w *Writer) Event(e host.Event) error {
	if e.Type != host.EventAssistantDelta {
		if err := w.closePartial(e); err != nil {
			return err
		}
	}
	switch e.Type {
	case host.EventSessionStart:
		w.model = e.Model
		w.calls, w.denials, w.errors, w.msgID, w.msgStep = map[string]call{}, nil, nil, "", 0
		return w.enc.Encode(w.init(e))
	case host.EventAssistantDelta:
		if !w.opts.IncludePartial {
			return nil
		}
		return w.delta(e)
	case host.EventAssistant:
		return w.enc.Encode(w.assistant(e, textBlock{Type: "text", Text: e.Text, Citations: nil}))
	case host.EventToolCall:
		input := objectOf(e.Arguments)
		w.calls[e.CallID] = call{name: toolName(e), input: input}
		return w.enc.Encode(w.assistant(e, toolUseBlock{Type: "tool_use", ID: e.CallID, Name: toolName(e), Input: input}))
	case host.EventToolResult:
		return w.enc.Encode(userMessage{
			Type:            "user",
			Message:         userParam{Role: "user", Content: []toolResultBlock{{Type: "tool_result", ToolUseID: e.CallID, Content: resultBlocks(e.Content), IsError: e.Failed()}}},
			ParentToolUseID: nil,
			SessionID:       e.SessionID,
			UUID:            newUUID(),
		})
	case host.EventToolProgress:
		// Claude Code's own line for a running tool; the server's
		// progress and message have no place in it.
		elapsed := 0.0
		if e.DurationMs != nil {
			elapsed = float64(*e.DurationMs) / 1000
		}
		return w.enc.Encode(toolProgress{Type: "tool_progress", ToolUseID: e.CallID, ToolName: toolName(e),
			ParentToolUseID: nil, ElapsedTimeSeconds: elapsed, UUID: newUUID(), SessionID: e.SessionID})
	case host.EventApproval:
		if denied(e.Outcome) {
			c := w.calls[e.CallID]
			if c.name == "" {
				c = call{name: toolName(e), input: json.RawMessage(`{}`)}
			}
			w.denials = append(w.denials, Denial{ToolName: c.name, ToolUseID: e.CallID, ToolInput: c.input})
		}
		return w.enc.Encode(e)
	case host.EventError:
		w.errors = append(w.errors, e.Error)
		return w.enc.Encode(e)
	case host.EventSessionEnd:
		return w.res.Encode(w.result(e))
	default: // approval_requested, authorization, tool_task and any later type
		return w.enc.Encode(e)
	}
}

// Denials are the calls the policy refused in the current turn.
func (w *Writer) Denials() []Denial { return slices.Clone(w.denials) }

// denied reports an approval outcome that refused the call.
func denied(outcome string) bool {
	return outcome != "" && !rules.Outcome(outcome).Allowed()
}

func (w *Writer) init(e host.Event) systemInit {
	tools := make([]string, 0, len(e.Tools))
	for _, t := range e.Tools {
		tools = append(tools, "mcp__"+t)
	}
	servers := make([]mcpServer, 0, len(e.Servers))
	for _, s := range e.Servers {
		servers = append(servers, mcpServer{Name: s.Name, Status: string(s.Status)})
	}
	mode := w.opts.PermissionMode
	if mode == "" {
		mode = "default"
	}
	return systemInit{
		Type: "system", Subtype: "init", APIKeySource: "none", ClaudeCodeVersion: host.Version,
		CWD: w.opts.CWD, Tools: tools, MCPServers: servers, Model: e.Model, PermissionMode: mode,
		SlashCommands: []string{}, OutputStyle: "default", Skills: []string{}, Plugins: []plugin{},
		UUID: newUUID(), SessionID: e.SessionID,
	}
}

// stepMessage is the message id of e's step: every assistant line of one
// model request carries the same id, as Claude Code's do.
func (w *Writer) stepMessage(step int) string {
	if w.msgID == "" || w.msgStep != step {
		w.msgID, w.msgStep = "msg_"+randomHex(12), step
	}
	return w.msgID
}

func (w *Writer) assistant(e host.Event, block any) assistantMessage {
	return assistantMessage{
		Type:            "assistant",
		Message:         w.message(e.Step, []any{block}),
		ParentToolUseID: nil,
		SessionID:       e.SessionID,
		UUID:            newUUID(),
	}
}

func (w *Writer) message(step int, content []any) betaMessage {
	return betaMessage{
		ID: w.stepMessage(step), Type: "message", Role: "assistant", Model: w.model, Content: content,
		Usage: zeroUsage(),
	}
}

func (w *Writer) result(e host.Event) resultMessage {
	u := usageOf(e.Usage)
	r := resultMessage{
		Type:              "result",
		Subtype:           "success",
		IsError:           false,
		NumTurns:          e.Steps,
		SessionID:         e.SessionID,
		TotalCostUSD:      0,
		Usage:             u,
		ModelUsage:        map[string]modelUsage{},
		PermissionDenials: nonNil(w.denials),
		UUID:              newUUID(),
	}
	if e.DurationMs != nil {
		r.DurationMs = *e.DurationMs
	}
	if e.APIDurationMs != nil {
		r.DurationAPIMs = *e.APIDurationMs
	}
	if w.model != "" {
		cost := 0.0
		if p, ok := w.opts.Prices[w.model]; ok && e.Usage != nil {
			cost = p.Cost(e.Usage.PromptTokens, e.Usage.CachedPromptTokens, e.Usage.CompletionTokens)
		}
		r.TotalCostUSD = cost
		r.ModelUsage[w.model] = modelUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.CacheReadInputTokens, CostUSD: cost}
	}
	switch e.Reason {
	case host.EndDone:
		r.Result = &e.Result
	case host.EndMaxSteps:
		r.Subtype, r.IsError = "error_max_turns", true
		errs := nonNil(w.errors)
		r.Errors = &errs
	default:
		r.Subtype, r.IsError = "error_during_execution", true
		errs := nonNil(w.errors)
		r.Errors = &errs
	}
	return r
}

// usageOf is u in the Messages API's terms, where input_tokens leaves out
// the tokens read from the cache (cache_read_input_tokens) that an
// OpenAI-compatible prompt_tokens includes.
func usageOf(u *host.Usage) usage {
	out := zeroUsage()
	if u != nil {
		cached := min(max(u.CachedPromptTokens, 0), u.PromptTokens)
		out.InputTokens, out.CacheReadInputTokens, out.OutputTokens = u.PromptTokens-cached, cached, u.CompletionTokens
	}
	return out
}

// objectOf is the call's arguments as a JSON object (tool_use input and
// permission_denials' tool_input are objects): arguments that are not an
// object are wrapped.
func objectOf(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(args) > 0 && json.Unmarshal(args, &obj) == nil && obj != nil {
		return args
	}
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"arguments": args})
	return b
}

// resultBlocks maps MCP content to tool_result content: text and images as
// they are, anything else as its text.
func resultBlocks(content []mcp.Content) []any {
	out := make([]any, 0, len(content))
	for _, c := range content {
		if img, ok := c.(mcp.ImageContent); ok {
			out = append(out, imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: img.MIMEType, Data: img.Data}})
			continue
		}
		out = append(out, textParam{Type: "text", Text: host.ContentText(c)})
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// delta writes a piece of streamed text as stream_event lines: the
// message_start and content_block_start of the step's text first.
func (w *Writer) delta(e host.Event) error {
	if !w.partial {
		w.partial = true
		w.partialSession = e.SessionID
		if err := w.stream(e.SessionID, messageStart{Type: "message_start", Message: w.message(e.Step, []any{})}); err != nil {
			return err
		}
		if err := w.stream(e.SessionID, blockStart{Type: "content_block_start", Index: 0, ContentBlock: textBlock{Type: "text"}}); err != nil {
			return err
		}
	}
	return w.stream(e.SessionID, blockDelta{Type: "content_block_delta", Index: 0, Delta: textDelta{Type: "text_delta", Text: e.Text}})
}

// closePartial ends an open streamed text block before the next event.
func (w *Writer) closePartial(host.Event) error {
	if !w.partial {
		return nil
	}
	w.partial = false
	sid := w.partialSession
	if err := w.stream(sid, blockStop{Type: "content_block_stop", Index: 0}); err != nil {
		return err
	}
	if err := w.stream(sid, messageDelta{Type: "message_delta", Delta: messageDeltaBody{}, Usage: zeroDeltaUsage()}); err != nil {
		return err
	}
	return w.stream(sid, messageStop{Type: "message_stop"})
}

func (w *Writer) stream(sessionID string, event any) error {
	return w.enc.Encode(streamEvent{Type: "stream_event", Event: event, ParentToolUseID: nil, SessionID: sessionID, UUID: newUUID()})
}
