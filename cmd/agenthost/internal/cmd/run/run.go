package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/answermode"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// RunOptions are `run`'s flags, as parsed.
type RunOptions struct {
	// Ctx is the command's context.
	Ctx          context.Context
	Args         []string
	Format       outputFormat // text unless --output-format says otherwise
	MaxSteps     int
	Print        bool
	SystemPrompt string
	Saved        sessionFlags
	Session      cmdutil.SessionFlags
	Headless     headlessFlags
	// MaxStepsSet and MaxTurnsSet say --max-steps and --max-turns were
	// given.
	MaxStepsSet, MaxTurnsSet bool
}

func (a *app) runCommand(runF func(*RunOptions) error) *cobra.Command {
	o := a.opts
	cmd := &cobra.Command{
		Use:   "run [PROMPT]",
		Short: "Run an agent session: one-shot with a prompt or piped stdin, a REPL on a terminal",
		Args:  cobra.MaximumNArgs(1),
		// A run that saves its session is handed over by a build
		// without saved sessions, before anything is said.
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return a.handOverSaved(o)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Ctx, o.Args = cmd.Context(), args
			o.MaxStepsSet, o.MaxTurnsSet = cmd.Flags().Changed("max-steps"), cmd.Flags().Changed("max-turns")
			return cmdutil.Run(o, runF, a.runRun)
		},
	}
	cmd.Flags().Var(&o.Format, "output-format", "text, json (Claude Code's result object), stream-json (Claude Code's lines), agenthost-json (agenthost's session_end) or agenthost-stream-json (agenthost's events); all are described in docs/events.md")
	cmd.Flags().IntVar(&o.MaxSteps, "max-steps", 20, "most model requests in one turn")
	cmd.Flags().BoolVarP(&o.Print, "print", "p", false, "one turn, print the answer and exit, even on a terminal (the prompt is the argument, else stdin)")
	cmd.Flags().StringVar(&o.SystemPrompt, "system-prompt", "", "system prompt sent first in every model request (overrides llm.systemPrompt)")
	cmdutil.AddSessionFlags(cmd, &o.Session)
	o.Saved.add(cmd)
	a.addHeadlessFlags(cmd)
	return cmd
}

// runRun runs the turns of `run`: one-shot, streamed from stdin, resumed,
// or the REPL.
func (a *app) runRun(o *RunOptions) error {
	if o.MaxSteps < 1 {
		return cmdutil.UsageErr(fmt.Errorf("--max-steps: must be at least 1"))
	}
	cfg, err := a.f.Config()
	if err != nil {
		return err
	}
	if o.SystemPrompt != "" {
		cfg.LLM.SystemPrompt = o.SystemPrompt
	}
	if err := a.applyHeadless(cfg); err != nil {
		return err
	}
	streamInput := a.opts.Headless.inputFormat == "stream-json"
	if streamInput && len(o.Args) == 1 {
		return cmdutil.UsageErr(errors.New("--input-format stream-json reads the prompts from stdin: give no PROMPT argument"))
	}
	interactive := len(o.Args) == 0 && !o.Print && !streamInput && a.f.IO.StdinIsTerminal()
	if interactive {
		a.setUpREPL(cfg)
	}
	// Its start overlaps the sessions', the host's and the session's.
	a.f.PrestartSupervisor(cfg, "")
	resuming, err := a.openSessions(o.Ctx, &o.Saved, interactive)
	if err != nil {
		return err
	}
	h, err := a.f.Host(cfg, &a.opts.Session)
	if err != nil {
		return err
	}
	sess, err := a.f.Session(h, &a.opts.Session)
	if err != nil {
		return err
	}
	defer sess.Close()
	ctx := o.Ctx
	title := ""
	if len(o.Args) == 1 {
		title = o.Args[0]
	}
	a.describeSession(ctx, h, sess, title)
	if resuming {
		if err := a.resumeTurns(ctx, sess, o.Format); err != nil {
			return err
		}
		if len(o.Args) == 0 && !interactive {
			data, _ := io.ReadAll(a.f.IO.In)
			if strings.TrimSpace(string(data)) == "" {
				return nil // resumed, and nothing more to say
			}
			o.Args = []string{strings.TrimSpace(string(data))}
		}
	}
	h.Connect(ctx)
	if err := cmdutil.NeedsLogin(h); err != nil {
		return err
	}
	// Said before a REPL opens or a turn starts, once the
	// configuration and the servers have had their say.
	if cfg.LLM.Model == "" {
		return cmdutil.UsageErr(errNoModel)
	}
	a.warnAboutTools(sess.View(ctx).Summary())
	h.WarnUnrecorded()
	return a.turns(h, sess, cfg.File, interactive, streamInput)

}

// handOverSaved is the NeedsFullError of a REPL in a build without one,
// and of a run that saves its session in a build without saved sessions,
// before anything is printed (nil otherwise); openSessions decides the
// same once the flags are applied.
func (a *app) handOverSaved(o *RunOptions) error {
	if o.Saved.check() != nil {
		return nil // openSessions says why
	}
	approve := o.Session.Approve
	if m, err := answermode.FromPermissionMode(o.Headless.permissionMode); o.Headless.permissionMode != "" && err == nil {
		approve = string(m)
	}
	interactive := len(o.Args) == 0 && !o.Print && o.Headless.inputFormat != "stream-json" && a.f.IO.StdinIsTerminal()
	switch {
	case interactive && a.repl == nil:
		return &cmdutil.NeedsFullError{What: "the REPL (run on a terminal with no prompt)"}
	case a.f.Features.Sessions == nil && o.Saved.saved().Saves(interactive, answermode.Mode(approve)):
		return &cmdutil.NeedsFullError{What: "saved sessions (a REPL, --save, --resume, --continue, --approve wait)"}
	}
	return nil
}

// setUpREPL makes the Factory ask approvals and servers' questions
// through the REPL's program (the full build's run/repl).
func (a *app) setUpREPL(cfg *config.Config) {
	a.interactive = a.repl.SetUp(a.f, cfg)
}

// events is how the REPL prints an event in the run's format when that is
// not text (nil for text): Claude Code's stream, else agenthost's lines.
func (a *app) events(format outputFormat) func(io.Writer) func(host.Event) {
	if format == formatText {
		return nil
	}
	return func(w io.Writer) func(host.Event) {
		if cc := a.claudeStream(w, format); cc != nil {
			return func(e host.Event) { _ = cc.Event(e) }
		}
		return func(e host.Event) { printJSONEvent(w, e, format) }
	}
}

// turns runs the run's turns on sess: stream-json lines from stdin, the
// prompt argument, the prompt on stdin, or the REPL.
func (a *app) turns(h *host.Host, sess *host.Session, cfgFile string, interactive, streamInput bool) error {
	ctx, o := a.opts.Ctx, a.opts
	// An incoming trace context, the way OpenTelemetry passes one
	// to a process (used only with telemetry on; docs/config.md).
	opts := host.TurnOptions{MaxSteps: o.MaxSteps, TraceParent: os.Getenv("TRACEPARENT"), TraceState: os.Getenv("TRACESTATE")}
	switch {
	case streamInput:
		return a.streamTurns(ctx, sess, o.Format, opts)
	case len(o.Args) == 1:
		return a.oneTurn(ctx, sess, o.Args[0], o.Format, opts)
	case !interactive:
		data, err := io.ReadAll(a.f.IO.In)
		if err != nil {
			return fmt.Errorf("read prompt from stdin: %w", err)
		}
		prompt := strings.TrimSpace(string(data))
		if prompt == "" {
			return cmdutil.UsageErr(errors.New("no prompt: give one as an argument or on stdin"))
		}
		return a.oneTurn(ctx, sess, prompt, o.Format, opts)
	default:
		return a.interactive.Run(ctx, h, sess, cfgFile, &o.Session, a.events(o.Format), opts)
	}
}

// warnAboutTools says on stderr when the model is offered no tools, or
// when some are not offered, with the most common reason: a session whose
// tools are all hidden must not run silently with none.
func (a *app) warnAboutTools(sum host.ViewSummary) {
	notOffered := sum.Hidden + sum.Excluded
	switch {
	case notOffered == 0 && sum.Active == 0:
		fmt.Fprintln(a.f.IO.ErrOut, "agenthost: warning: the model is offered no tools: no server listed any (`agenthost servers` shows each server's state).")
	case notOffered == 0:
		return
	case sum.Active == 0:
		fmt.Fprintf(a.f.IO.ErrOut, "agenthost: warning: the model is offered no tools: %d hidden, %d excluded. Most common reason (%d): %s\n  `agenthost tools` lists every tool and why.\n",
			sum.Hidden, sum.Excluded, sum.TopReasonCount, cmdutil.Shown(a.f.IO.ErrOut, sum.TopReason))
	default:
		fmt.Fprintf(a.f.IO.ErrOut, "agenthost: %d of %d tools are not offered to the model (%d hidden, %d excluded). Most common reason (%d): %s\n",
			notOffered, notOffered+sum.Active, sum.Hidden, sum.Excluded, sum.TopReasonCount, cmdutil.Shown(a.f.IO.ErrOut, sum.TopReason))
	}
}

// oneTurn runs a single turn and maps its end to the exit code.
func (a *app) oneTurn(ctx context.Context, sess *host.Session, prompt string, format outputFormat, opts host.TurnOptions) error {
	end, lastErr := a.printTurn(ctx, sess, prompt, format, opts)
	return turnExit(end, lastErr)
}

func turnExit(end host.Event, lastErr *host.Event) error {
	switch end.Reason {
	case host.EndDone:
		return nil
	case host.EndMaxSteps:
		return &cmdutil.ExitErr{Code: cmdutil.ExitMaxSteps, Printed: true}
	case host.EndInterrupted:
		return &cmdutil.ExitErr{Code: 130, Printed: true}
	default:
		code := cmdutil.ExitError
		if lastErr != nil && lastErr.Kind == host.KindConfig {
			code = cmdutil.ExitUsage
		}
		return &cmdutil.ExitErr{Code: code, Printed: true}
	}
}

// printTurn runs a turn, printing its events in the chosen format. It
// returns the session_end event and the last error event.
func (a *app) printTurn(ctx context.Context, sess *host.Session, prompt string, format outputFormat, opts host.TurnOptions) (host.Event, *host.Event) {
	end, lastErr, _ := a.printEvents(sess.Turn(ctx, prompt, opts), format)
	return end, lastErr
}

// printEvents prints a turn's events in the chosen format; seen reports
// whether there was one.
func (a *app) printEvents(events iter.Seq[host.Event], format outputFormat) (end host.Event, lastErr *host.Event, seen bool) {
	enc := json.NewEncoder(a.f.IO.Out)
	enc.SetEscapeHTML(false)
	p := NewTextPrinter(a.f.IO.Out, a.f.IO.ErrOut)
	cc := a.claudeStream(a.f.IO.Out, format)
	for e := range events {
		seen = true
		switch e.Type {
		case host.EventSessionEnd:
			end = e
		case host.EventError:
			ev := e
			lastErr = &ev
		}
		switch format {
		case formatStreamJSON, formatJSON:
			_ = cc.Event(e)
		case formatAgentStreamJSON:
			if e.Type != host.EventAssistantDelta {
				_ = enc.Encode(e)
			}
		case formatText:
			p.Print(e)
		}
	}
	if format == formatAgentJSON && seen {
		// result is always present in agenthost-json output, even when empty.
		out := struct {
			host.Event
			Result string `json:"result"`
		}{end, end.Result}
		_ = enc.Encode(out)
	}
	return end, lastErr, seen
}

// TextPrinter shows a person the turn: assistant text on stdout, tool
// activity and errors on stderr, escaped where they go to a terminal. Each
// call is numbered within the turn, so that parallel calls pair with their
// approvals and results.
type TextPrinter struct {
	stdout, stderr io.Writer
	midLine        bool
	calls          map[string]int // call id -> number
	// explained: the fix an approval_requested event printed, by call id
	// (its approval event does not repeat it).
	explained map[string]string
}

// approversOf is how many approvers an approval_requested event needs.
func approversOf(e host.Event) int {
	if e.Approvers == nil {
		return 0
	}
	return *e.Approvers
}

// NewTextPrinter prints a run's text format: the answer to stdout, the
// rest to stderr.
func NewTextPrinter(stdout, stderr io.Writer) *TextPrinter {
	return &TextPrinter{stdout: stdout, stderr: stderr, calls: map[string]int{}}
}

// CallLabel is "[N] server/tool" of the call e is about, numbered in the
// order the turn's calls came.
func (p *TextPrinter) CallLabel(e host.Event) string {
	n, ok := p.calls[e.CallID]
	if !ok {
		n = len(p.calls) + 1
		p.calls[e.CallID] = n
	}
	name := e.ExposedName
	if e.Server != "" {
		name = e.Server + "/" + e.Tool
	}
	return fmt.Sprintf("[%d] %s", n, cmdutil.Shown(p.stderr, name))
}

// Print prints one event.
func (p *TextPrinter) Print(e host.Event) {
	switch e.Type {
	case host.EventAssistantDelta:
		fmt.Fprint(p.stdout, cmdutil.Shown(p.stdout, e.Text))
		p.midLine = !strings.HasSuffix(e.Text, "\n")
		return
	case host.EventAssistant, host.EventSessionEnd:
		if p.midLine {
			fmt.Fprintln(p.stdout)
		}
		p.midLine = false
	}
	switch e.Type {
	case host.EventToolCall:
		fmt.Fprintf(p.stderr, "→ %s %s\n", p.CallLabel(e), cmdutil.Shown(p.stderr, cmdutil.Truncate(string(e.Arguments), 200)))
	case host.EventApprovalRequested:
		if e.ApprovalID != "" {
			fmt.Fprintf(p.stderr, "  %s approval requested: %s (risk %s, %s, expires %s)\n", p.CallLabel(e), cmdutil.Shown(p.stderr, e.ApprovalID),
				cmdutil.Shown(p.stderr, e.RiskLevel), cmdutil.Plural(approversOf(e), "approver"), cmdutil.Shown(p.stderr, e.Deadline))
			return
		}
		fmt.Fprintf(p.stderr, "  %s approval requested, but nobody can answer it here: %s\n", p.CallLabel(e), cmdutil.Shown(p.stderr, e.Explanation))
		if p.explained == nil {
			p.explained = map[string]string{}
		}
		p.explained[e.CallID] = e.Explanation
	case host.EventApproval:
		fmt.Fprintf(p.stderr, "  %s approval: %s (%s)\n", p.CallLabel(e), e.Decision, e.Outcome)
		if e.Explanation != "" && e.Explanation != p.explained[e.CallID] {
			fmt.Fprintf(p.stderr, "  %s not asked: %s\n", p.CallLabel(e), e.Explanation)
		}
	case host.EventToolTask:
		line := fmt.Sprintf("  %s task %s: %s", p.CallLabel(e), cmdutil.Shown(p.stderr, cmdutil.Truncate(e.TaskID, 40)), cmdutil.Shown(p.stderr, e.TaskStatus))
		if e.StatusMessage != "" {
			line += " (" + cmdutil.Shown(p.stderr, cmdutil.Truncate(e.StatusMessage, 200)) + ")"
		}
		fmt.Fprintln(p.stderr, line)
	case host.EventToolResult:
		status := "ok"
		if e.Failed() {
			status = "error"
		}
		fmt.Fprintf(p.stderr, "← %s %s: %s\n", p.CallLabel(e), status, cmdutil.Shown(p.stderr, cmdutil.Truncate(host.ContentsText(e.Content, " "), 200)))
	case host.EventError:
		fmt.Fprintf(p.stderr, "agenthost: %s\n", cmdutil.Shown(p.stderr, e.Error))
	case host.EventSessionEnd:
		if e.Reason != host.EndDone {
			fmt.Fprintf(p.stderr, "agenthost: turn ended: %s after %s\n", e.Reason, cmdutil.Plural(e.Steps, "step"))
		}
	}
}

// errNoModel is the CLI's words for host.ErrNoModel, said before the
// first turn.
var errNoModel = fmt.Errorf("%w: set llm.model in the config (docs/config.md) or AGENTHOST_LLM_MODEL in the environment; the endpoint and key come from llm.baseURL and llm.apiKey, else OPENAI_BASE_URL and OPENAI_API_KEY", host.ErrNoModel)
