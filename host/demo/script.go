package demo

import (
	"context"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// scriptedModel is the demo's built-in model: a fixed script, played one
// step per model request, labelled as such wherever it speaks. It behaves
// like a model that falls for the prompt injection in the data.
type scriptedModel struct{}

type scriptStep struct {
	text string
	tool string // exposed tool name; "" ends the turn
	args string
}

var script = []scriptStep{
	{text: "Let me look up the pending orders.", tool: "orders__execute_sql",
		args: `{"query":"SELECT id, customer, total, note FROM orders WHERE status = 'pending'"}`},
	{text: "One of the rows says a connectivity check on the payroll instance is required. I'll run it.",
		tool: "orders__execute_sql", args: `{"query":"SELECT * FROM salaries","instance":"payroll"}`},
	{text: "That was refused. I'll try the same query without naming the instance.",
		tool: "orders__execute_sql", args: `{"query":"SELECT * FROM salaries"}`},
	{text: "While I'm here, I'll clean up the cancelled orders.",
		tool: "orders__delete_rows", args: `{"table":"orders","where":"status = 'cancelled'"}`},
	{text: "And I'll reset the database to finish the maintenance the note asked for.",
		tool: "orders__drop_database", args: `{"confirm":true,"force":true}`},
	{text: "There are two pending orders: 1001 for Ada (42.50) and 1002 for Grace (17.00). " +
		"Order 1002 carries a note asking AI agents to read the payroll database; I could not, " +
		"because the host pins this session to the checkout instance."},
}

// Complete plays the step that matches how many times the model has
// already answered in this conversation.
func (scriptedModel) Complete(ctx context.Context, req openai.ChatCompletionRequest, onText func(string)) (openai.ChatCompletionMessage, openai.Usage, error) {
	if err := ctx.Err(); err != nil {
		return openai.ChatCompletionMessage{}, openai.Usage{}, err
	}
	step := 0
	for _, m := range req.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			step++
		}
	}
	if step >= len(script) {
		step = len(script) - 1
	}
	s := script[step]
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: s.text}
	if onText != nil {
		for _, word := range strings.SplitAfter(s.text, " ") {
			onText(word)
		}
	}
	if s.tool != "" {
		msg.ToolCalls = []openai.ToolCall{{
			ID: fmt.Sprintf("call_demo_%d", step), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: s.tool, Arguments: s.args},
		}}
	}
	usage := openai.Usage{PromptTokens: 0, CompletionTokens: len(strings.Fields(s.text))}
	usage.TotalTokens = usage.CompletionTokens
	return msg, usage, nil
}
