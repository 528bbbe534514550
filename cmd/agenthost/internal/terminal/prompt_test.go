package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/syncbuf"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
)

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer

// waitFor polls until the output contains s count times. It may run on
// any goroutine, so it reports with Errorf.
func waitFor(t *testing.T, out *syncBuffer, s string, count int) bool {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(out.String(), s) < count {
		if time.Now().After(deadline) {
			t.Errorf("output never contained %q %d times:\n%s", s, count, out.String())
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func promptRequest(grantable bool) *approvals.Request {
	return &approvals.Request{
		ID: "apr_1", Server: "orders", Tool: "drop_table",
		Arguments: json.RawMessage(`{"table": "users", "note": "\u001b[2Jgotcha"}`),
		Risk:      risk.FailClosed(), Reason: `asked by rule "deletes"`, Message: "needs a human",
		Approvers: 1, Deadline: time.Now().Add(time.Minute), SessionGrantable: grantable,
	}
}

func TestPromptAnswers(t *testing.T) {
	tests := []struct {
		name      string
		grantable bool
		input     []string // lines written one per question
		decision  approvals.VoteDecision
		session   bool
		noVote    bool
	}{
		{"yes", true, []string{"y"}, approvals.VoteAllow, false, false},
		{"yes word, spaces, capitals", false, []string{"  YES "}, approvals.VoteAllow, false, false},
		{"session", true, []string{"s"}, approvals.VoteAllow, true, false},
		{"session refused when not grantable, then no", false, []string{"s", "n"}, approvals.VoteDeny, false, false},
		{"garbage re-asks", true, []string{"maybe", "", "\x1b[A", "n"}, approvals.VoteDeny, false, false},
		{"end of input denies", true, nil, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w := io.Pipe()
			out := &syncBuffer{}
			p := NewPrompt(r, out, "operator")
			defer p.Close()
			go func() {
				for i, line := range tt.input {
					if !waitFor(t, out, "Allow?", i+1) {
						break
					}
					if _, err := io.WriteString(w, line+"\n"); err != nil {
						return
					}
				}
				if tt.noVote {
					waitFor(t, out, "Allow?", 1)
				}
				w.Close()
			}()
			v, err := p.Approve(context.Background(), promptRequest(tt.grantable))
			if err != nil {
				t.Fatal(err)
			}
			if tt.noVote {
				if len(v.Votes) != 0 {
					t.Fatalf("votes %+v, want none", v.Votes)
				}
				// Input stays closed: later questions are not asked.
				if v2, _ := p.Approve(context.Background(), promptRequest(true)); len(v2.Votes) != 0 {
					t.Errorf("after EOF: %+v", v2)
				}
				return
			}
			if len(v.Votes) != 1 || v.Votes[0].Decision != tt.decision || v.Votes[0].ForSession != tt.session || v.Votes[0].ApproverID != "operator" {
				t.Fatalf("votes %+v", v.Votes)
			}
			if n := strings.Count(out.String(), "Allow?"); n != len(tt.input) {
				t.Errorf("asked %d times, want %d", n, len(tt.input))
			}
			w.Close()
		})
	}
}

func TestPromptShowsRequestSafely(t *testing.T) {
	r, w := io.Pipe()
	out := &syncBuffer{}
	p := NewPrompt(r, out, "")
	defer p.Close()
	go func() {
		waitFor(t, out, "Allow?", 1)
		io.WriteString(w, "n\n")
		w.Close()
	}()
	if _, err := p.Approve(context.Background(), promptRequest(true)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"orders", "drop_table", `"table":"users"`, `\u001b[2Jgotcha`, "destroy", "critical", "global",
		`asked by rule "deletes"`, "needs a human", "[s] for this session", "1 needed"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.ContainsRune(s, '\x1b') {
		t.Errorf("raw escape byte reached the terminal: %q", s)
	}
	if !strings.Contains(terminalSafe("a\u009bb\u202ec", 100), `\u009b`) || strings.ContainsRune(terminalSafe("a\u202e", 10), '\u202e') {
		t.Errorf("terminalSafe let C1/bidi characters through")
	}
}

func TestPromptHonoursContextAndDiscardsStaleLines(t *testing.T) {
	r, w := io.Pipe()
	out := &syncBuffer{}
	// The question is abandoned once the read is under way (a fixed
	// timeout could end it before the reader started on a loaded machine,
	// and then nobody would ever read the line typed below).
	reading := &firstRead{r: r, started: make(chan struct{})}
	p := NewPrompt(reading, out, "operator")
	var tick atomic.Int64
	p.in.now = func() time.Time { return time.Unix(0, tick.Add(1)) } // strictly increasing
	defer func() {
		w.Close()
		p.Close()
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-reading.started
		cancel()
	}()
	abandoned, err := p.Approve(ctx, promptRequest(true))
	if err != nil || len(abandoned.Votes) != 1 || abandoned.Votes[0].Note != InterruptedNote {
		t.Fatalf("cancelled question: %+v, %v; want an interrupted deny", abandoned, err)
	}
	// Typed while no question is open: the abandoned read takes it, and the
	// next question must not treat it as its answer.
	if _, err := io.WriteString(w, "y\n"); err != nil {
		t.Fatal(err)
	}
	for len(p.in.lines) == 0 {
		time.Sleep(time.Millisecond)
	}
	go func() {
		waitFor(t, out, "Allow?", 2) // the first question and the second (the stale line is skipped)
		io.WriteString(w, "n\n")
	}()
	v, err := p.Approve(context.Background(), promptRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Votes) != 1 || v.Votes[0].Decision != approvals.VoteDeny {
		t.Fatalf("stale 'y' was taken as the answer: %+v", v.Votes)
	}
}

// A question whose context runs out is an error (the caller records it as
// expired), not an answer, whether the deadline ends it before or after
// the read began; nothing is typed, so no line can be left unread.
func TestPromptDeadlineIsNotAnAnswer(t *testing.T) {
	r, w := io.Pipe()
	p := NewPrompt(r, &syncBuffer{}, "operator")
	defer func() {
		w.Close()
		p.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	v, err := p.Approve(ctx, promptRequest(true))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Approve after the deadline = %+v, %v; want context.DeadlineExceeded", v, err)
	}
}

func TestReadLineDoesNotReadAhead(t *testing.T) {
	in := strings.NewReader("y\nrest of the input\n")
	line, _, err := readLine(in, maxAnswerLen)
	if err != nil || line != "y" {
		t.Fatalf("readLine = %q, %v", line, err)
	}
	rest, _ := io.ReadAll(in)
	if string(rest) != "rest of the input\n" {
		t.Errorf("read ahead: left %q", rest)
	}
	if _, _, err := readLine(strings.NewReader("y"), maxAnswerLen); !errors.Is(err, io.EOF) {
		t.Errorf("line without newline: %v, want EOF (deny)", err)
	}
	long, tooLong, err := readLine(strings.NewReader(strings.Repeat("x", 10000)+"\n"), maxAnswerLen)
	if err != nil || len(long) != maxAnswerLen || !tooLong {
		t.Errorf("long line: %d bytes, %v", len(long), err)
	}
}

func TestPromptWaitingForItsTurnHonoursContext(t *testing.T) {
	r, w := io.Pipe()
	out := &syncBuffer{}
	p := NewPrompt(r, out, "operator")
	defer func() {
		w.Close()
		p.Close()
	}()
	first := make(chan error, 1)
	go func() {
		_, err := p.Approve(context.Background(), promptRequest(true))
		first <- err
	}()
	waitFor(t, out, "Allow?", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Approve(ctx, promptRequest(true)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second question while the first is open: %v, want deadline exceeded", err)
	}
	io.WriteString(w, "y\n")
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// A prompt answering for the requester does not ask: the answer could not
// count.
func TestPromptDoesNotAskTheRequester(t *testing.T) {
	for _, requester := range []string{"operator", "Operator", "operator\u200b"} {
		out := &bytes.Buffer{}
		p := NewPrompt(strings.NewReader("y\n"), out, "operator")
		v, err := p.Approve(context.Background(), &approvals.Request{Requester: requester, Approvers: 1})
		if err != nil || len(v.Votes) != 0 {
			t.Errorf("requester %q: votes %+v err %v, want none", requester, v.Votes, err)
		}
		if strings.Contains(out.String(), "Allow?") || !strings.Contains(out.String(), "cannot approve its own calls") {
			t.Errorf("requester %q: output %q", requester, out.String())
		}
		_ = p.Close()
	}
}

// Ctrl-C at the question (ctx cancelled) denies the call with the note
// "interrupted", and the read the question left open goes to the next
// reader of the shared input: the next line typed is not swallowed.
func TestPromptInterruptedGivesItsReadBack(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	in := NewInput(r)
	defer in.Close()
	out := &syncBuffer{}
	p := NewInputPrompt(in, out, "operator")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if waitFor(t, out, "Allow?", 1) {
			cancel()
		}
	}()
	v, err := p.Approve(ctx, promptRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Votes) != 1 || v.Votes[0].Decision != approvals.VoteDeny || v.Votes[0].Note != InterruptedNote || v.Votes[0].ApproverID != "operator" {
		t.Fatalf("votes %+v, want one deny vote noted %q", v.Votes, InterruptedNote)
	}
	if !strings.Contains(out.String(), "interrupted: denied") || strings.Contains(out.String(), "no answer in time") {
		t.Errorf("output:\n%s", out.String())
	}
	go io.WriteString(w, "the next question\n")
	line, err := in.ReadLine(context.Background())
	if err != nil || line != "the next question" {
		t.Fatalf("next line %q, %v", line, err)
	}
	// End of input reaches the next reader too, and stays.
	w.Close()
	for range 2 {
		if _, err := in.ReadLine(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("after end of input: %v, want EOF", err)
		}
	}
}

// Arguments too long to show say how long they are and how much is
// shown; v shows them all, escaped, and asks again.
func TestPromptLongArguments(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		long    bool
		summary string
	}{
		{"short", 100, false, ""},
		{"at the limit", maxArgsShown, false, ""},
		{"long", 12345, true, "(12,345 bytes, first 2,000 characters shown; answer v to view all)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// {"a":"xxx…\u001b"} compacts to tt.size bytes.
			body := strings.Repeat("x", tt.size-len(`{"a":"\u001b"}`)) + `\u001b`
			req := promptRequest(false)
			req.Arguments = json.RawMessage(`{"a": "` + body + `"}`)
			r, w := io.Pipe()
			out := &syncBuffer{}
			p := NewPrompt(r, out, "operator")
			defer p.Close()
			go func() {
				defer w.Close()
				for i, line := range []string{"v", "n"} {
					if !waitFor(t, out, "Allow?", i+1) {
						return
					}
					io.WriteString(w, line+"\n")
				}
			}()
			v, err := p.Approve(context.Background(), req)
			if err != nil || len(v.Votes) != 1 || v.Votes[0].Decision != approvals.VoteDeny {
				t.Fatalf("votes %+v, err %v", v.Votes, err)
			}
			s := out.String()
			if got := strings.Contains(s, "answer v to view all"); got != tt.long {
				t.Errorf("size line shown: %v, want %v\n%s", got, tt.long, s[:min(len(s), 300)])
			}
			if tt.long && !strings.Contains(s, tt.summary) {
				t.Errorf("output lacks %q", tt.summary)
			}
			if got := strings.Contains(s, "[v] view all arguments"); got != tt.long {
				t.Errorf("v offered: %v, want %v", got, tt.long)
			}
			// Whether or not v was offered, it shows the whole arguments.
			full := `{"a":"` + strings.Repeat("x", tt.size-len(`{"a":"\u001b"}`)) + `\u001b"}`
			if !strings.Contains(s, full) {
				t.Errorf("the whole arguments were never shown")
			}
			if strings.ContainsRune(s, '\x1b') {
				t.Errorf("raw escape byte reached the terminal")
			}
		})
	}
}

// firstRead closes started when the first Read begins.
type firstRead struct {
	r       io.Reader
	once    sync.Once
	started chan struct{}
}

func (f *firstRead) Read(b []byte) (int, error) {
	f.once.Do(func() { close(f.started) })
	return f.r.Read(b)
}
