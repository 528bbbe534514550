package terminal

import (
	"context"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/approvals"
)

// Asker is the terminal a Prompt asks on: a line reader of its own
// (NewPrompt, NewInputPrompt), or an interactive program that owns the
// terminal (the CLI's REPL) and draws the question itself.
type Asker interface {
	// Show prints text (whole lines) for the person.
	Show(text string)
	// Ask draws question and returns the next line typed after it was
	// drawn, without its newline: input typed before the question was
	// drawn is never its answer. It returns ctx.Err() when ctx ends
	// first, io.EOF (or ErrInputClosed) when no answer can come.
	Ask(ctx context.Context, question string) (string, error)
}

// NewInputAsker asks on a shared Input, writing to out.
func NewInputAsker(in *Input, out io.Writer) Asker { return inputAsker{in: in, out: out} }

// inputAsker asks on an Input and a writer.
type inputAsker struct {
	in  *Input
	out io.Writer
}

func (a inputAsker) Show(text string) { _, _ = io.WriteString(a.out, text) }

func (a inputAsker) Ask(ctx context.Context, question string) (string, error) {
	fmt.Fprint(a.out, question)
	return a.in.readLine(ctx, a.in.now())
}

// PromptOptions are the answers a Prompt offers beyond once, for the
// session, deny and view.
type PromptOptions struct {
	// Always, when set, offers "a": allow this call and every later call
	// of the tool, persisted by Always (a rule in the CLI's local settings
	// file). It is offered only where such a rule would take effect
	// (approvals.Request.AlwaysBar). Always returns what to tell the person (where the
	// rule was saved). The vote also allows the tool for the session.
	Always func(req *approvals.Request) (string, error)
	// Reasons offers "r": deny, with a reason the model is told.
	Reasons bool
	// Detail returns extra lines shown under the request (a diff of the
	// file a call would write), already escaped; "" shows nothing.
	Detail func(req *approvals.Request) string
}

// NewAskerPrompt is a terminal approver asking on a; its votes carry
// approverID ("terminal" if empty).
func NewAskerPrompt(a Asker, approverID string, opts PromptOptions) *Prompt {
	p := NewInputPrompt(nil, nil, approverID)
	p.ask, p.opts = a, opts
	return p
}
