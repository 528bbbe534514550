package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Prompt asks a person at a terminal. It shows the server, tool,
// arguments, effective risk and why approval is needed, then reads one
// line: y allows once, s allows the tool for the rest of the session (only
// offered when the tool needs a single approver), n denies, v shows
// arguments too long to show in full. Anything else is asked again. End of
// input (a line without a newline included) means no approver is
// available, which denies. When ctx reaches its deadline the ask expires;
// when ctx is cancelled while the question is open (Ctrl-C ends the REPL's
// turn) the person's answer is taken as n, with the note "interrupted".
//
// Prompt reads its answers from an Input, which it may share with whoever
// else reads the same terminal (a REPL): a line typed before the question
// was printed is not taken as its answer, and a read left open by an
// interrupted question goes to the next reader. One question is open at a
// time; concurrent Approve calls wait their turn.
type Prompt struct {
	in    *Input
	owned bool // in was made by NewPrompt: Close closes it
	ask   Asker
	opts  PromptOptions
	id    string
	now   func() time.Time

	turn chan struct{} // one question at a time
}

// maxAnswerLen caps one answer line read by a Prompt from NewPrompt.
const maxAnswerLen = 4096

// InterruptedNote is the note of the deny vote a Prompt casts when its
// question is interrupted.
const InterruptedNote = "interrupted"

// NewPrompt returns a terminal approver reading answers from in and writing
// questions to out; its votes carry approverID ("terminal" if empty). It
// reads in only while a question is open, without reading ahead.
func NewPrompt(in io.Reader, out io.Writer, approverID string) *Prompt {
	p := NewInputPrompt(newInput(in, maxAnswerLen), out, approverID)
	p.owned = true
	return p
}

// NewInputPrompt is NewPrompt reading its answers from a shared Input.
func NewInputPrompt(in *Input, out io.Writer, approverID string) *Prompt {
	if approverID == "" {
		approverID = "terminal"
	}
	return &Prompt{in: in, ask: inputAsker{in: in, out: out}, id: approverID, now: time.Now, turn: make(chan struct{}, 1)}
}

// MaxApprovers is 1: one person at one terminal.
func (p *Prompt) MaxApprovers() int { return 1 }

// ApproverID is the id the prompt's votes carry.
func (p *Prompt) ApproverID() string { return p.id }

// Close stops reading the input when the Prompt made it (NewPrompt); a
// shared Input is closed by its owner.
func (p *Prompt) Close() error {
	if p.owned && p.in != nil {
		return p.in.Close()
	}
	return nil
}

// Approve asks and waits for an answer.
func (p *Prompt) Approve(ctx context.Context, req *approvals.Request) (approvals.Verdict, error) {
	select {
	case p.turn <- struct{}{}:
		defer func() { <-p.turn }()
	case <-ctx.Done():
		return approvals.Verdict{}, ctx.Err()
	}
	if ids.SameID(p.id, req.Requester) {
		// The answer could not count: do not ask.
		p.ask.Show(fmt.Sprintf("\n%s: denied\n", terminalSafe(approvals.SelfApprovalExplanation(p.id), 500)))
		return approvals.Verdict{}, nil
	}
	args := compactJSON(req.Arguments)
	desc := describeRequest(req, args, p.now())
	if p.opts.Detail != nil {
		desc += p.opts.Detail(req)
	}
	p.ask.Show(desc)
	long := utf8.RuneCountInString(args) > maxArgsShown
	always := p.opts.Always != nil && req.AlwaysBar() == approvals.AlwaysAllowed
	answers := []string{"y"}
	question := "Allow? [y] once"
	if always {
		answers = append(answers, "a")
		question += "  [a] always"
	}
	if req.SessionGrantable {
		answers = append(answers, "s")
		question += "  [s] for this session"
	}
	answers = append(answers, "n")
	question += "  [n] deny"
	if p.opts.Reasons {
		answers = append(answers, "r")
		question += "  [r] deny with a reason"
	}
	answerList := strings.Join(answers[:len(answers)-1], ", ") + " or " + answers[len(answers)-1]
	if len(answers) == 2 {
		answerList = answers[0] + " or " + answers[1]
	}
	if long {
		answerList += " (v views the arguments)"
		question += "  [v] view all arguments"
	}
	question += ": "
	for {
		text, err := p.ask.Ask(ctx, question)
		if v, done, err := p.ended(ctx, err, answerList); done {
			return v, err
		}
		vote := approvals.Vote{ApproverID: p.id, TS: p.now().UTC()}
		switch strings.ToLower(strings.TrimSpace(text)) {
		case "y", "yes":
			vote.Decision = approvals.VoteAllow
		case "a", "always":
			if !always {
				p.ask.Show(p.alwaysUnavailable(req))
				continue
			}
			said, err := p.opts.Always(req)
			if err != nil {
				p.ask.Show(fmt.Sprintf("could not save the rule: %s\n", terminalSafe(err.Error(), 500)))
				continue
			}
			p.ask.Show(terminalSafe(said, 500) + "\n")
			vote.Decision, vote.ForSession = approvals.VoteAllow, true
		case "s", "session":
			if !req.SessionGrantable {
				if req.Unclassified {
					p.ask.Show("allowing for the session is not available for an unclassified tool (classify it first)\n")
				} else {
					p.ask.Show(fmt.Sprintf("allowing for the session is not available for this tool (it needs %d approvers)\n", req.Approvers))
				}
				continue
			}
			vote.Decision, vote.ForSession = approvals.VoteAllow, true
		case "n", "no":
			vote.Decision = approvals.VoteDeny
		case "r", "reason":
			if !p.opts.Reasons {
				p.ask.Show(fmt.Sprintf("please answer %s\n", answerList))
				continue
			}
			reason, err := p.ask.Ask(ctx, "reason for the model (empty: ask again): ")
			if v, done, err := p.ended(ctx, err, answerList); done {
				return v, err
			}
			if reason = strings.TrimSpace(reason); reason == "" {
				continue
			}
			vote.Decision, vote.Note = approvals.VoteDeny, reason
		case "v", "view":
			p.ask.Show(fmt.Sprintf("  arguments (%s bytes):\n%s\n", GroupDigits(len(args)), terminalSafe(args, 0)))
			continue
		default:
			p.ask.Show(fmt.Sprintf("please answer %s\n", answerList))
			continue
		}
		return approvals.Verdict{Votes: []approvals.Vote{vote}}, nil
	}
}

// ended maps a failed Ask to the Approve result: done is false when the
// question is to be asked again (a line too long) or there was no error.
func (p *Prompt) ended(ctx context.Context, err error, answers string) (approvals.Verdict, bool, error) {
	switch {
	case err == nil:
		return approvals.Verdict{}, false, nil
	case errors.Is(err, ErrLineTooLong):
		p.ask.Show(fmt.Sprintf("please answer %s\n", answers))
		return approvals.Verdict{}, false, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		if errors.Is(err, context.Canceled) {
			p.ask.Show("\ninterrupted: denied\n")
			return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: p.id, Decision: approvals.VoteDeny, TS: p.now().UTC(), Note: InterruptedNote}}}, true, nil
		}
		p.ask.Show("\nno answer in time: denied\n")
		return approvals.Verdict{}, true, err
	case errors.Is(err, io.EOF), errors.Is(err, ErrInputClosed):
		p.ask.Show("\ninput closed: denied\n")
		return approvals.Verdict{}, true, nil
	default:
		p.ask.Show("\ninput closed: denied\n")
		return approvals.Verdict{}, true, err
	}
}

// alwaysUnavailable says why "always" is not offered for req.
func (p *Prompt) alwaysUnavailable(req *approvals.Request) string {
	if p.opts.Always == nil {
		return "allowing always is not available here\n"
	}
	switch req.AlwaysBar() {
	case approvals.AlwaysUnclassified:
		return "allowing always is not available for an unclassified tool (classify it first)\n"
	case approvals.AlwaysNeedsApprovers:
		return fmt.Sprintf("allowing always is not available for this tool (it needs %d approvers)\n", req.Approvers)
	case approvals.AlwaysRuleAsks:
		return fmt.Sprintf("allowing always is not available: rule %s asks for this call, and a rule's ask is not lifted by an allow rule\n", terminalSafe(strings.Join(req.Rules, ", "), 300))
	default:
		return "allowing always is not available for this tool\n"
	}
}

// maxArgsShown is how many characters of the arguments a question shows
// before the person asks to view them all.
const maxArgsShown = 2000

// GroupDigits writes n with thousands separators: 12,345.
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// DescribeRisk is the risk line of a request for a person: every field of
// e. For an unclassified tool it says so instead of showing the fail-closed
// bucket (critical, destroy, global) as if it were the tool's risk, and
// shows only the fields that someone did classify (the catalogue, a trusted
// server or inference). Text from a server is escaped.
func DescribeRisk(e risk.Effective, unclassified bool) string {
	known := func(src risk.Source) bool { return !unclassified || src != risk.SourceDefault }
	var parts []string
	if known(e.Source.Category) {
		parts = append(parts, string(e.Category))
	}
	if known(e.Source.RiskLevel) {
		parts = append(parts, string(e.RiskLevel)+" risk")
	}
	if known(e.Source.BlastRadius) {
		parts = append(parts, "blast radius "+string(e.BlastRadius))
	}
	if known(e.Source.Reversibility) {
		parts = append(parts, "reversibility "+string(e.Reversibility))
	}
	if known(e.Source.SideEffects) {
		side := "none"
		if len(e.SideEffects) > 0 {
			side = strings.Join(e.SideEffects, ", ")
		}
		parts = append(parts, "side effects "+terminalSafe(side, 300))
	}
	if !unclassified {
		return strings.Join(append(parts, fmt.Sprintf("needs trust %d", e.MinTrustLevel)), ", ")
	}
	if len(parts) == 0 {
		return "unclassified (nobody rated this tool's risk)"
	}
	return "unclassified (nobody rated the rest of this tool's risk): " + strings.Join(parts, ", ")
}

// describeRequest renders a request for a terminal; everything that came
// from a server or the model is escaped so it cannot drive the terminal.
func describeRequest(req *approvals.Request, args string, now time.Time) string {
	var b strings.Builder
	b.WriteString("\napproval needed")
	if req.ID != "" {
		fmt.Fprintf(&b, " [%s]", terminalSafe(req.ID, 80))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  server:     %s\n", terminalSafe(req.Server, 200))
	fmt.Fprintf(&b, "  tool:       %s\n", terminalSafe(req.Tool, 200))
	fmt.Fprintf(&b, "  arguments:  %s\n", terminalSafe(args, maxArgsShown))
	if n := utf8.RuneCountInString(args); n > maxArgsShown {
		fmt.Fprintf(&b, "              (%s bytes, first %s characters shown; answer v to view all)\n", GroupDigits(len(args)), GroupDigits(maxArgsShown))
	}
	fmt.Fprintf(&b, "  risk:       %s\n", DescribeRisk(req.Risk, req.Unclassified))
	why := req.Reason
	if req.Message != "" {
		why += " — " + req.Message
	}
	fmt.Fprintf(&b, "  why:        %s\n", terminalSafe(why, 500))
	if req.Unclassified {
		b.WriteString("  unclassified: nobody classified this tool, so this call is asked, never granted for the session\n")
		hints := "none"
		if len(req.Hints) > 0 {
			hints = strings.Join(req.Hints, ", ")
		}
		fmt.Fprintf(&b, "  server says (untrusted): %s\n", terminalSafe(hints, 300))
	}
	if !req.Deadline.IsZero() {
		fmt.Fprintf(&b, "  approvers:  %d needed; expires in %s\n", req.Approvers, req.Deadline.Sub(now).Round(time.Second))
	} else {
		fmt.Fprintf(&b, "  approvers:  %d needed\n", req.Approvers)
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// terminalSafe escapes every non-printable rune (control, format, invalid
// UTF-8) as \uXXXX and caps the result at max runes.
func terminalSafe(s string, max int) string { return escapeTerminal(s, max, false) }
