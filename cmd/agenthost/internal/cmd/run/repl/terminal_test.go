package repl

import (
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
)

// A server's question is escaped on the terminal, its text and its
// fields' names.
func TestElicitationIsEscapedOnATerminal(t *testing.T) {
	el := &cmdtest.Screen{}
	req := mcp.ElicitationRequest{}
	req.Params.Message = cmdtest.Hostile
	req.Params.RequestedSchema = map[string]any{"type": "object", "properties": map[string]any{"x\x1b[2J\r": map[string]any{"type": "string"}}}
	if _, err := newTerminalElicitation(terminal.NewInputAsker(terminal.NewInput(strings.NewReader("\nn\n")), el)).ask(context.Background(), "srv", req); err != nil {
		t.Fatal(err)
	}
	cmdtest.AssertEscaped(t, "elicitation", el.String())
}
