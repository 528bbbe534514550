package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Prompt asks a person at a terminal. It shows the server, tool,
// arguments, effective risk and why approval is needed, then reads one
// line: y allows once, s allows the tool for the rest of the session (only
// offered when the tool needs a single approver), n denies. Anything else
// is asked again. End of input (a line without a newline included) means no
// approver is available, which denies; so does ctx ending.
//
// Prompt reads the input one byte at a time, and only while a question is
// open, so it takes nothing that belongs to whoever else reads the same
// input (a REPL). A read left open by an abandoned question is finished by
// the next question, and a line typed before that question was printed is
// discarded rather than taken as its answer. One question is open at a
// time; concurrent Approve calls wait their turn.
//
// The reader goroutine starts with the first question and stops when the
// input ends or fails, or after Close once no read is in flight.
type Prompt struct {
	in  io.Reader
	out io.Writer
	id  string
	now func() time.Time

	turn    chan struct{} // one question at a time; the holder owns reading and ended
	reading bool
	ended   error

	start   sync.Once
	want    chan struct{}
	lines   chan promptLine
	done    chan struct{}
	stopped sync.Once
}

type promptLine struct {
	text string
	err  error
	at   time.Time
}

// maxAnswerLen caps one answer line; the rest of a longer line is dropped.
const maxAnswerLen = 4096

// NewPrompt returns a terminal approver reading answers from in and writing
// questions to out; its votes carry approverID ("terminal" if empty).
func NewPrompt(in io.Reader, out io.Writer, approverID string) *Prompt {
	if approverID == "" {
		approverID = "terminal"
	}
	return &Prompt{
		in: in, out: out, id: approverID, now: time.Now,
		turn:  make(chan struct{}, 1),
		want:  make(chan struct{}),
		lines: make(chan promptLine, 1),
		done:  make(chan struct{}),
	}
}

// MaxApprovers is 1: one person at one terminal.
func (p *Prompt) MaxApprovers() int { return 1 }

// ApproverID is the id the prompt's votes carry.
func (p *Prompt) ApproverID() string { return p.id }

// Close stops the reader goroutine (after the read in flight, if any).
func (p *Prompt) Close() error {
	p.stopped.Do(func() { close(p.done) })
	return nil
}

func (p *Prompt) readLoop() {
	for {
		select {
		case <-p.done:
			return
		case <-p.want:
		}
		text, err := readLine(p.in)
		p.lines <- promptLine{text: text, err: err, at: p.now()}
		if err != nil {
			return
		}
	}
}

// readLine reads up to '\n' without reading ahead. It fails when the input
// ends before a newline.
func readLine(r io.Reader) (string, error) {
	var b []byte
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n == 1 {
			if one[0] == '\n' {
				return string(b), nil
			}
			if len(b) < maxAnswerLen {
				b = append(b, one[0])
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", io.EOF
			}
			return "", fmt.Errorf("read answer: %w", err)
		}
	}
}

// Approve asks and waits for an answer.
func (p *Prompt) Approve(ctx context.Context, req *Request) (Verdict, error) {
	select {
	case p.turn <- struct{}{}:
		defer func() { <-p.turn }()
	case <-ctx.Done():
		return Verdict{}, ctx.Err()
	}
	if p.ended != nil {
		return Verdict{}, nil
	}
	select {
	case <-p.done:
		return Verdict{}, nil
	default:
	}
	if SameID(p.id, req.Requester) {
		// The answer could not count: do not ask.
		fmt.Fprintf(p.out, "\n%s: denied\n", terminalSafe(SelfApprovalExplanation(p.id), 500))
		return Verdict{}, nil
	}
	p.start.Do(func() { go p.readLoop() })
	if _, err := io.WriteString(p.out, describeRequest(req, p.now())); err != nil {
		return Verdict{}, fmt.Errorf("show approval request: %w", err)
	}
	question := "Allow? [y] once  [n] deny: "
	if req.SessionGrantable {
		question = "Allow? [y] once  [s] for this session  [n] deny: "
	}
	for {
		fmt.Fprint(p.out, question)
		asked := p.now()
		if !p.reading {
			select {
			case p.want <- struct{}{}:
				p.reading = true
			case <-ctx.Done():
				fmt.Fprintln(p.out, "\nno answer in time: denied")
				return Verdict{}, ctx.Err()
			}
		}
		var line promptLine
		select {
		case line = <-p.lines:
			p.reading = false
		case <-ctx.Done():
			fmt.Fprintln(p.out, "\nno answer in time: denied")
			return Verdict{}, ctx.Err()
		}
		if line.err != nil {
			p.ended = line.err
			fmt.Fprintln(p.out, "\ninput closed: denied")
			if errors.Is(line.err, io.EOF) {
				return Verdict{}, nil
			}
			return Verdict{}, line.err
		}
		if line.at.Before(asked) {
			continue // typed before this question was shown
		}
		vote := Vote{ApproverID: p.id, TS: p.now().UTC()}
		switch strings.ToLower(strings.TrimSpace(line.text)) {
		case "y", "yes":
			vote.Decision = VoteAllow
		case "s", "session":
			if !req.SessionGrantable {
				if req.Unclassified {
					fmt.Fprintln(p.out, "allowing for the session is not available for an unclassified tool (classify it first)")
				} else {
					fmt.Fprintf(p.out, "allowing for the session is not available for this tool (it needs %d approvers)\n", req.Approvers)
				}
				continue
			}
			vote.Decision, vote.ForSession = VoteAllow, true
		case "n", "no":
			vote.Decision = VoteDeny
		default:
			if req.SessionGrantable {
				fmt.Fprintln(p.out, "please answer y, s or n")
			} else {
				fmt.Fprintln(p.out, "please answer y or n")
			}
			continue
		}
		return Verdict{Votes: []Vote{vote}}, nil
	}
}

// describeRequest renders a request for a terminal; everything that came
// from a server or the model is escaped so it cannot drive the terminal.
func describeRequest(req *Request, now time.Time) string {
	var b strings.Builder
	b.WriteString("\napproval needed")
	if req.ID != "" {
		fmt.Fprintf(&b, " [%s]", terminalSafe(req.ID, 80))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  server:     %s\n", terminalSafe(req.Server, 200))
	fmt.Fprintf(&b, "  tool:       %s\n", terminalSafe(req.Tool, 200))
	fmt.Fprintf(&b, "  arguments:  %s\n", terminalSafe(compactJSON(req.Arguments), 2000))
	r := req.Risk
	side := "none"
	if len(r.SideEffects) > 0 {
		side = strings.Join(r.SideEffects, ", ")
	}
	fmt.Fprintf(&b, "  risk:       %s, %s risk, blast radius %s, reversibility %s, side effects %s, needs trust %d\n",
		r.Category, r.RiskLevel, r.BlastRadius, r.Reversibility, terminalSafe(side, 300), r.MinTrustLevel)
	why := req.Reason
	if req.Message != "" {
		why += " — " + req.Message
	}
	fmt.Fprintf(&b, "  why:        %s\n", terminalSafe(why, 500))
	if req.Unclassified {
		b.WriteString("  unclassified: nobody classified this tool; the risk above is the fail-closed default, and this call is asked, never granted for the session\n")
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
