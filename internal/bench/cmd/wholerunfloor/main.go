// Command wholerunfloor is the floor of the whole-run benchmark
// (BenchmarkWholeRun in package bench): the one-shot run `agenthost run`
// does, done with the two libraries the host is built on and nothing of
// the host. It starts one stdio MCP server with mcp-go, initializes it
// and lists its tools, then streams chat completions with go-openai,
// calling each tool the model asks for on that server (named
// SERVER__TOOL, as the host names them) until the model answers with
// text, which it prints:
//
//	OPENAI_BASE_URL=... OPENAI_API_KEY=... AGENTHOST_LLM_MODEL=... \
//	  wholerunfloor SERVER PROMPT COMMAND [ARG...]
//
// The server is started in a session of its own with a parent-death
// signal, the attributes the host gives its stdio servers, so the two
// runs differ by the host's code alone. It stands in for the host of
// commit fb71548 in issue #26's whole-run target.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	openai "github.com/sashabaranov/go-openai"
)

const maxSteps = 10

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: wholerunfloor SERVER PROMPT COMMAND [ARG...]")
		os.Exit(2)
	}
	text, err := run(context.Background(), os.Args[1], os.Args[2], os.Args[3], os.Args[4:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wholerunfloor:", err)
		os.Exit(1)
	}
	fmt.Println(text)
}

func run(ctx context.Context, server, prompt, command string, args []string) (string, error) {
	mcpc, err := client.NewStdioMCPClientWithOptions(command, nil, args,
		transport.WithCommandFunc(func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.SysProcAttr = serverAttr()
			return cmd, nil
		}))
	if err != nil {
		return "", err
	}
	defer mcpc.Close()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "wholerunfloor", Version: "1"}
	if _, err := mcpc.Initialize(ctx, init); err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	listed, err := mcpc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return "", fmt.Errorf("tools/list: %w", err)
	}
	var tools []openai.Tool
	for _, t := range listed.Tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return "", err
		}
		tools = append(tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: server + "__" + t.Name, Description: t.Description, Parameters: json.RawMessage(schema)}})
	}

	cfg := openai.DefaultConfig(os.Getenv("OPENAI_API_KEY"))
	cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	llm := openai.NewClientWithConfig(cfg)
	req := openai.ChatCompletionRequest{
		Model:         os.Getenv("AGENTHOST_LLM_MODEL"),
		Messages:      []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: prompt}},
		Tools:         tools,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	for range maxSteps {
		msg, err := complete(ctx, llm, req)
		if err != nil {
			return "", err
		}
		req.Messages = append(req.Messages, msg)
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		for _, call := range msg.ToolCalls {
			name, ok := strings.CutPrefix(call.Function.Name, server+"__")
			if !ok {
				return "", fmt.Errorf("the model called %q, not a tool of %s", call.Function.Name, server)
			}
			var callReq mcp.CallToolRequest
			callReq.Params.Name = name
			callReq.Params.Arguments = json.RawMessage(call.Function.Arguments)
			res, err := mcpc.CallTool(ctx, callReq)
			if err != nil {
				return "", fmt.Errorf("tools/call %s: %w", name, err)
			}
			var out strings.Builder
			for _, c := range res.Content {
				if t, ok := c.(mcp.TextContent); ok {
					out.WriteString(t.Text)
				}
			}
			req.Messages = append(req.Messages, openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleTool, ToolCallID: call.ID, Content: out.String()})
		}
	}
	return "", fmt.Errorf("no answer in %d steps", maxSteps)
}

// complete streams one chat completion and returns the assistant message
// it adds up to.
func complete(ctx context.Context, llm *openai.Client, req openai.ChatCompletionRequest) (openai.ChatCompletionMessage, error) {
	stream, err := llm.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return openai.ChatCompletionMessage{}, fmt.Errorf("model request: %w", err)
	}
	defer stream.Close()
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return msg, fmt.Errorf("model stream: %w", err)
		}
		for _, choice := range chunk.Choices {
			text.WriteString(choice.Delta.Content)
			for i, tc := range choice.Delta.ToolCalls {
				idx := i
				if tc.Index != nil {
					idx = *tc.Index
				}
				for len(msg.ToolCalls) <= idx {
					msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{Type: openai.ToolTypeFunction})
				}
				c := &msg.ToolCalls[idx]
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Function.Name += tc.Function.Name
				c.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	msg.Content = text.String()
	return msg, nil
}
