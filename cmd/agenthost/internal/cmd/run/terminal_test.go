package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/call"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/host"
)

// The terminal's hostile text and its check are the commands' test kit's.
type screen = cmdtest.Screen

const hostile = cmdtest.Hostile

func assertEscaped(t *testing.T, where, out string) { t.Helper(); cmdtest.AssertEscaped(t, where, out) }

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
	p := &TextPrinter{stdout: stdout, stderr: stderr, calls: map[string]int{}}
	for _, e := range events {
		p.Print(e)
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

}

// TestTextOutputIsRawOffATerminal: piped or redirected output keeps the
// server's bytes.
func TestTextOutputIsRawOffATerminal(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := &TextPrinter{stdout: &stdout, stderr: &stderr, calls: map[string]int{}}
	p.Print(host.Event{Type: host.EventAssistantDelta, Text: hostile})
	if stdout.String() != hostile {
		t.Errorf("stdout = %q, want the text as it is", stdout.String())
	}
	var out bytes.Buffer
	call.PrintContent(&out, &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(hostile)}})
	if out.String() != hostile+"\n" {
		t.Errorf("call output = %q, want the text as it is", out.String())
	}
}
