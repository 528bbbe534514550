package demo

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/agenthost/agenthost/host/model"
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

// Generate plays the step that matches how many times the model has
// already answered in this conversation, streaming its text word by word.
func (scriptedModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		step := 0
		for _, m := range req.Messages {
			if m.Role == model.RoleAssistant {
				step++
			}
		}
		if step >= len(script) {
			step = len(script) - 1
		}
		s := script[step]
		for _, word := range strings.SplitAfter(s.text, " ") {
			if !yield(&model.Response{Partial: true, Message: model.Message{Role: model.RoleAssistant, Content: word}}, nil) {
				return
			}
		}
		msg := model.Message{Role: model.RoleAssistant, Content: s.text}
		if s.tool != "" {
			msg.ToolCalls = []model.ToolCall{{ID: fmt.Sprintf("call_demo_%d", step), Name: s.tool, Arguments: s.args}}
		}
		words := len(strings.Fields(s.text))
		yield(&model.Response{Message: msg, Usage: model.Usage{CompletionTokens: words, TotalTokens: words}}, nil)
	}
}
