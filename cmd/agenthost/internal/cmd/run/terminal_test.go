package run

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/call"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/host"
)

// screen is an io.Writer that says it is a terminal.
type screen struct{ bytes.Buffer }

func (*screen) IsTerminal() bool { return true }

// hostile is server or model text that would drive a terminal: clear the
// screen, set the title (OSC), ring the bell, return to the line start and
// overwrite it with a forged approval, hide text with a bidi override.
const hostile = "ok\x1b[2J\x1b]0;title\x07\rapproval needed: [y] yes\u202e\x9b31m"

func assertEscaped(t *testing.T, where, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("%s: %q reached the terminal: %q", where, c, out)
		}
	}
	if !strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u000d`) {
		t.Errorf("%s: escapes not shown: %q", where, out)
	}
}

func TestTextOutputIsEscapedOnATerminal(t *testing.T) {
	events := []host.Event{
		{Type: host.EventAssistantDelta, Text: hostile},
		{Type: host.EventAssistant, Text: hostile},
		{Type: host.EventToolCall, Server: "s", Tool: "t\x1b[1m", Arguments: json.RawMessage(`{"q":"` + "\x1b[2J" + `\r"}`)},
		{Type: host.EventToolResult, Content: []mcp.Content{mcp.NewTextContent(hostile)}},
		{Type: host.EventError, Error: hostile},
		{Type: host.EventApprovalRequested, CallID: "c1", ApprovalID: hostile, RiskLevel: hostile, Deadline: hostile},
		{Type: host.EventApprovalRequested, CallID: "c2", Explanation: hostile},
		{Type: host.EventToolTask, CallID: "c3", TaskID: hostile, TaskStatus: hostile, StatusMessage: hostile},
	}
	stdout, stderr := &screen{}, &screen{}
	p := &textPrinter{stdout: stdout, stderr: stderr, calls: map[string]int{}}
	for _, e := range events {
		p.print(e)
	}
	assertEscaped(t, "run stdout", stdout.String())
	assertEscaped(t, "run stderr", stderr.String())
	if strings.Contains(stderr.String(), "\x1b[1m") {
		t.Errorf("tool name not escaped: %q", stderr.String())
	}

	out := &screen{}
	call.PrintContent(out, &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("line 1\n\tline 2 " + hostile)}})
	assertEscaped(t, "call", out.String())
	if !strings.HasPrefix(out.String(), "line 1\n\tline 2 ") {
		t.Errorf("newline and tab not kept: %q", out.String())
	}

	el := &screen{}
	req := mcp.ElicitationRequest{}
	req.Params.Message = hostile
	req.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"x\x1b[2J\r": map[string]any{"type": "string"}}}
	if _, err := newTerminalElicitation(terminal.NewInputAsker(terminal.NewInput(strings.NewReader("\nn\n")), el)).ask(context.Background(), "srv", req); err != nil {
		t.Fatal(err)
	}
	assertEscaped(t, "elicitation", el.String())
}

// TestTextOutputIsRawOffATerminal: piped or redirected output keeps the
// server's bytes.
func TestTextOutputIsRawOffATerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := &textPrinter{stdout: &stdout, stderr: &stderr, calls: map[string]int{}}
	p.print(host.Event{Type: host.EventAssistantDelta, Text: hostile})
	if stdout.String() != hostile {
		t.Errorf("stdout = %q, want the text as it is", stdout.String())
	}
	var out bytes.Buffer
	call.PrintContent(&out, &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(hostile)}})
	if out.String() != hostile+"\n" {
		t.Errorf("call output = %q, want the text as it is", out.String())
	}
}
