package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/run"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
)

// The REPL (`agenthost run` on a terminal, docs/cli.md "The REPL") is a
// bubbletea program that owns the terminal: it reads every key, so input
// typed while a turn runs is a draft of the next message, never the answer
// to a question drawn later. Approval and elicitation questions are asked
// through it (replUI implements terminal.Asker).

const (
	// maxPrompt is the longest message the REPL sends (docs promise 1 MiB).
	maxPrompt = terminal.MaxInputLine
	// pasteInline is the largest paste put in the editor as it is; a
	// larger one is held aside and shown as a placeholder.
	pasteInline = 2048
	// typeAheadGrace: keys arriving this soon after a question was drawn
	// were typed before anyone could read it, and are discarded too.
	typeAheadGrace = 150 * time.Millisecond
	// exitWindow is how soon a second Ctrl-C at an empty prompt must come
	// to leave.
	exitWindow = 2 * time.Second
	tickEvery  = 100 * time.Millisecond
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// replUI is the handle other goroutines (the turn, the approval prompt, a
// server's question) use to reach the program.
type replUI struct {
	prog *tea.Program
	done chan struct{} // closed when the program has ended

	mu     sync.Mutex
	labels map[string]string // call id -> "[N] server/tool" of the running turn
}

// printMsg is text (whole lines) to print above the editor.
type printMsg struct{ text string }

// deltaMsg is streamed assistant text.
type deltaMsg struct{ text string }

// statusMsg is what the spinner line says the turn is doing.
type statusMsg struct{ text string }

// turnDoneMsg ends a turn.
type turnDoneMsg struct{ end host.Event }

type printedMsg struct{}
type tickMsg struct{}

// askReq is one open question.
type askReq struct {
	question string
	reply    chan askReply
	armAt    time.Time // keys before this are typed ahead
}

type askReply struct {
	line string
	err  error
}

type askMsg struct{ req *askReq }
type askGoneMsg struct{ req *askReq }

// Show prints text for the person, above the editor.
func (u *replUI) Show(text string) { u.prog.Send(printMsg{text: text}) }

// Ask draws the question and waits for the line typed after it.
func (u *replUI) Ask(ctx context.Context, question string) (string, error) {
	req := &askReq{question: question, reply: make(chan askReply, 1)}
	u.prog.Send(askMsg{req: req})
	select {
	case r := <-req.reply:
		return r.line, r.err
	case <-ctx.Done():
		u.prog.Send(askGoneMsg{req: req})
		return "", ctx.Err()
	case <-u.done:
		return "", terminal.ErrInputClosed
	}
}

func (u *replUI) setLabel(callID, label string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.labels[callID] = label
}

func (u *replUI) label(callID string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.labels[callID]
}

// repl keeps one conversation across turns until /exit, Ctrl-D or a second
// Ctrl-C at an empty prompt.
func (a *app) Run(ctx context.Context, h *host.Host, sess *host.Session, cfgFile string, session *cmdutil.SessionFlags, events func(io.Writer) func(host.Event), opts host.TurnOptions) error {
	a.sess, a.session, a.events = sess, session, events
	ui := a.ui
	m := newReplModel(ctx, a, h, ui, cfgFile, opts)
	out := a.f.IO.ErrOut
	if cmdutil.IsTerminal(a.f.IO.Out) {
		out = a.f.IO.Out
	}
	ui.prog = tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(a.f.IO.In), tea.WithOutput(out), tea.WithoutSignalHandler())
	final, err := ui.prog.Run()
	close(ui.done)
	fm, _ := final.(*replModel)
	if fm != nil {
		fm.stopTurn()
		fm.hist.save()
		if fm.sess != sess { // /clear's: the run closes the one it gave
			fm.sess.Close()
		}
	}
	if ctx.Err() != nil {
		return &cmdutil.ExitErr{Code: 130, Printed: true}
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("the terminal: %w", err)
	}
	return nil
}

// replModel is the program's state; only the program's goroutine touches
// it.
type replModel struct {
	ctx   context.Context
	a     *app
	h     *host.Host
	ui    *replUI
	sess  *host.Session
	local *localAlways
	opts  host.TurnOptions

	editor textarea.Model
	width  int
	hist   *history
	pastes map[string]string
	pasteN int

	running    bool
	cancelTurn context.CancelFunc
	turnDone   chan struct{}
	started    time.Time
	frame      int
	status     string
	partial    string
	queued     []string

	asks       []*askReq // the first is drawn
	askPending bool      // asks[0] waits for the lines before it to print

	out      []string
	printing bool

	ctrlCAt  time.Time
	notice   string
	usage    model.Usage
	turns    int
	quitting bool
}

func newReplModel(ctx context.Context, a *app, h *host.Host, ui *replUI, cfgFile string, opts host.TurnOptions) *replModel {
	ed := textarea.New()
	ed.Prompt = "> "
	ed.ShowLineNumbers = false
	ed.Placeholder = editorPlaceholder(os.Getenv("TERM"))
	ed.CharLimit = 0
	ed.DynamicHeight = true
	ed.MinHeight = 1
	ed.MaxHeight = 10
	ed.SetHeight(1)
	ed.KeyMap.InsertNewline.SetKeys("shift+enter", "alt+enter", "ctrl+j")
	ed.KeyMap.DeleteCharacterForward.SetKeys("delete")
	ed.KeyMap.Paste.SetEnabled(false) // the terminal's own paste (bracketed) is used
	ed.Focus()
	return &replModel{ctx: ctx, a: a, h: h, ui: ui, sess: a.sess, local: a.local, opts: opts,
		editor: ed, hist: loadHistory(historyPath()), pastes: map[string]string{}}
}

// editorPlaceholder is the hint an empty editor shows, none on a dumb
// terminal: there it cannot be drawn faint, so it read as typed text, and
// the cursor drawn over its first letter showed as a stray character.
func editorPlaceholder(term string) string {
	if term == "dumb" {
		return ""
	}
	return "message, /help for commands"
}

func (m *replModel) Init() tea.Cmd {
	return tea.Println("agenthost: interactive session. Enter sends, Shift-Enter (or Ctrl-J, or \\ at the end) adds a line; Ctrl-C clears the line, interrupts a turn, twice leaves; /help lists commands.")
}

func (m *replModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width = msg.Width
		m.editor.SetWidth(max(msg.Width-1, 10))
		return m, nil
	case printMsg:
		m.addOut(msg.text)
		return m, m.flush()
	case printedMsg:
		m.printing = false
		return m, m.flush()
	case deltaMsg:
		m.partial += msg.text
		if i := strings.LastIndexByte(m.partial, '\n'); i >= 0 {
			m.addOut(m.partial[:i+1])
			m.partial = m.partial[i+1:]
		}
		return m, m.flush()
	case statusMsg:
		m.status = msg.text
		return m, nil
	case tickMsg:
		if !m.running {
			return m, nil
		}
		m.frame++
		return m, tick()
	case turnDoneMsg:
		return m, m.endTurn(msg.end)
	case askMsg:
		m.asks = append(m.asks, msg.req)
		if len(m.asks) == 1 {
			m.askPending = true
		}
		return m, m.flush()
	case askGoneMsg:
		m.dropAsk(msg.req)
		return m, m.flush()
	case tea.PasteMsg:
		return m, m.paste(msg.Content)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(msg)
	return m, cmd
}

// addOut queues text to print; a partial assistant line goes first.
func (m *replModel) addOut(text string) {
	if m.partial != "" && !strings.HasPrefix(text, m.partial) {
		m.out = append(m.out, m.partial)
		m.partial = ""
	}
	m.out = append(m.out, strings.TrimSuffix(text, "\n"))
}

// flush prints the queued lines, one print at a time, so that lines keep
// their order; a question waiting for them is drawn once they are out.
func (m *replModel) flush() tea.Cmd {
	if m.printing {
		return nil
	}
	if len(m.out) == 0 {
		if m.askPending && len(m.asks) > 0 {
			m.drawAsk()
		}
		return nil
	}
	text := strings.Join(m.out, "\n")
	m.out = nil
	m.printing = true
	return tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} })
}

// drawAsk shows the first question: what was typed before it is
// discarded, and said so.
func (m *replModel) drawAsk() {
	m.askPending = false
	q := m.asks[0]
	q.armAt = time.Now().Add(typeAheadGrace)
	if n := len([]rune(m.editor.Value())); n > 0 {
		m.notice = fmt.Sprintf("discarded %d typed-ahead characters: a question is answered only by what is typed after it appears", n)
		m.editor.Reset()
	} else {
		m.notice = ""
	}
}

func (m *replModel) dropAsk(req *askReq) {
	for i, q := range m.asks {
		if q == req {
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			if i == 0 {
				m.askPending = len(m.asks) > 0
			}
			return
		}
	}
}

func (m *replModel) answer(r askReply) {
	q := m.asks[0]
	m.asks = m.asks[1:]
	m.askPending = len(m.asks) > 0
	q.reply <- r
	if r.err == nil {
		m.addOut(q.question + terminal.TerminalText(r.line))
	}
}

func tick() tea.Cmd { return tea.Tick(tickEvery, func(time.Time) tea.Msg { return tickMsg{} }) }

func (m *replModel) key(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c":
		return m.ctrlC()
	case "ctrl+d":
		if m.editor.Value() == "" {
			if len(m.asks) > 0 && !m.askPending {
				m.answer(askReply{err: io.EOF})
				m.quitting = true
				return m.flush()
			}
			return m.quit()
		}
	case "enter":
		return m.enter()
	case "esc":
		if m.running {
			m.interrupt()
			return nil
		}
	case "up":
		if m.editor.Line() == 0 && len(m.asks) == 0 {
			if s, ok := m.hist.prev(m.editor.Value()); ok {
				m.editor.SetValue(s)
			}
			return nil
		}
	case "down":
		if m.editor.Line() == m.editor.LineCount()-1 && len(m.asks) == 0 {
			if s, ok := m.hist.next(); ok {
				m.editor.SetValue(s)
			}
			return nil
		}
	}
	m.ctrlCAt = time.Time{}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(k)
	return cmd
}

func (m *replModel) ctrlC() tea.Cmd {
	switch {
	case len(m.asks) > 0 || m.running:
		m.editor.Reset()
		m.interrupt()
		return nil
	case m.editor.Value() != "":
		m.editor.Reset()
		m.hist.reset()
		m.notice = ""
		return nil
	case !m.ctrlCAt.IsZero() && time.Since(m.ctrlCAt) < exitWindow:
		return m.quit()
	default:
		m.ctrlCAt = time.Now()
		m.notice = "^C  press Ctrl-C again to leave (or Ctrl-D, /exit)"
		return nil
	}
}

// interrupt ends the running turn; an open question is denied as
// interrupted (its ctx ends).
func (m *replModel) interrupt() {
	if m.cancelTurn != nil {
		m.cancelTurn()
		m.notice = "^C  interrupting the turn"
	}
}

func (m *replModel) quit() tea.Cmd {
	m.quitting = true
	if m.running {
		m.interrupt()
		return nil // endTurn quits
	}
	return tea.Quit
}

func (m *replModel) enter() tea.Cmd {
	v := m.editor.Value()
	if strings.HasSuffix(v, "\\") && len(m.asks) == 0 {
		m.editor.SetValue(strings.TrimSuffix(v, "\\") + "\n")
		return nil
	}
	if len(m.asks) > 0 {
		if m.askPending {
			return nil
		}
		if time.Now().Before(m.asks[0].armAt) {
			m.notice = fmt.Sprintf("discarded %d typed-ahead characters: a question is answered only by what is typed after it appears", len([]rune(v))+1)
			m.editor.Reset()
			return nil
		}
		m.editor.Reset()
		m.notice = ""
		m.answer(askReply{line: m.expand(v)})
		return m.flush()
	}
	text := m.expand(v)
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if len(text) > maxPrompt {
		m.notice = fmt.Sprintf("not sent: the message is %s bytes, over the limit of %s", terminal.GroupDigits(len(text)), terminal.GroupDigits(maxPrompt))
		return nil
	}
	m.editor.Reset()
	m.notice = ""
	m.hist.add(text)
	m.pastes = map[string]string{}
	if m.running {
		m.queued = append(m.queued, text)
		m.addOut("queued for after this turn: " + firstLine(terminal.TerminalText(text), 200))
		return m.flush()
	}
	return m.submit(text)
}

// submit sends a message or runs a slash command.
func (m *replModel) submit(text string) tea.Cmd {
	line := strings.TrimSpace(text)
	if line == "exit" || line == "quit" {
		return m.quit()
	}
	if strings.HasPrefix(line, "/") {
		return m.slash(line)
	}
	m.addOut("> " + firstLine(terminal.TerminalText(text), 500))
	m.startTurn(text)
	return tea.Batch(m.flush(), tick())
}

func (m *replModel) startTurn(prompt string) {
	ctx, cancel := context.WithCancel(m.ctx)
	m.running, m.cancelTurn, m.started, m.status = true, cancel, time.Now(), "thinking"
	m.turnDone = make(chan struct{})
	m.a.f.SetInterrupt(cancel)
	m.ui.mu.Lock()
	m.ui.labels = map[string]string{}
	m.ui.mu.Unlock()
	go m.a.replTurn(ctx, m.ui, m.sess, prompt, m.opts, m.turnDone, m.local)
}

// stopTurn ends a turn still running when the program ends, and waits for
// it.
func (m *replModel) stopTurn() {
	if m.running && m.cancelTurn != nil {
		m.cancelTurn()
		<-m.turnDone
	}
}

func (m *replModel) endTurn(end host.Event) tea.Cmd {
	m.running = false
	m.a.f.SetInterrupt(nil)
	if m.cancelTurn != nil {
		m.cancelTurn()
	}
	m.cancelTurn = nil
	m.turns++
	if end.Usage != nil {
		m.usage.Add(model.Usage{PromptTokens: end.Usage.PromptTokens, CompletionTokens: end.Usage.CompletionTokens, TotalTokens: end.Usage.TotalTokens})
	}
	if m.partial != "" {
		m.out = append(m.out, m.partial)
		m.partial = ""
	}
	if strings.HasPrefix(m.notice, "^C") {
		m.notice = ""
	}
	if m.quitting {
		return tea.Sequence(m.flush(), tea.Quit)
	}
	if end.Reason == host.EndInterrupted && len(m.queued) > 0 {
		// An interrupted turn puts the queued messages back to edit.
		m.editor.SetValue(strings.Join(m.queued, "\n"))
		m.queued = nil
	}
	if len(m.queued) > 0 {
		next := m.queued[0]
		m.queued = m.queued[1:]
		return tea.Batch(m.flush(), m.submit(next))
	}
	return m.flush()
}

// paste puts pasted text in the editor; a large paste is held aside and
// shown as a placeholder, expanded when the message is sent.
func (m *replModel) paste(s string) tea.Cmd {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	if len(s) <= pasteInline && strings.Count(s, "\n") < 5 {
		m.editor.InsertString(s)
		return nil
	}
	m.pasteN++
	ph := fmt.Sprintf("[pasted text #%d: %s bytes, %d lines]", m.pasteN, terminal.GroupDigits(len(s)), strings.Count(s, "\n")+1)
	m.pastes[ph] = s
	m.editor.InsertString(ph)
	return nil
}

func (m *replModel) expand(v string) string {
	for ph, s := range m.pastes {
		v = strings.ReplaceAll(v, ph, s)
	}
	return v
}

func (m *replModel) View() tea.View {
	var b strings.Builder
	if m.partial != "" {
		b.WriteString(m.partial)
		b.WriteString("\n")
	}
	if len(m.asks) > 0 && !m.askPending {
		b.WriteString(m.asks[0].question)
		b.WriteString("\n")
	} else if m.running {
		fmt.Fprintf(&b, "%s %s  %s  (Ctrl-C interrupts)\n", spinnerFrames[m.frame%len(spinnerFrames)], terminal.TerminalText(m.status), time.Since(m.started).Truncate(time.Second))
	}
	b.WriteString(m.editor.View())
	if m.notice != "" {
		b.WriteString("\n")
		b.WriteString(m.notice)
	}
	return tea.NewView(b.String())
}

// replTurn runs one turn on its own goroutine, sending what it prints to
// the program; it closes done when the turn has ended.
func (a *app) replTurn(ctx context.Context, ui *replUI, sess *host.Session, prompt string, opts host.TurnOptions, done chan struct{}, local *localAlways) {
	defer close(done)
	w := &uiWriter{ui: ui}
	p := run.NewTextPrinter(w, w)
	var end host.Event
	var show func(host.Event) // the run's format, when it is not text
	if a.events != nil {
		show = a.events(w)
	}
	for e := range sess.Turn(ctx, prompt, opts) {
		if e.Type == host.EventSessionEnd {
			end = e
		}
		if show != nil {
			show(e)
			continue
		}
		switch e.Type {
		case host.EventAssistantDelta:
			ui.prog.Send(deltaMsg{text: terminal.TerminalText(e.Text)})
			continue
		case host.EventToolCall:
			label := p.CallLabel(e)
			ui.setLabel(e.CallID, label)
			ui.prog.Send(statusMsg{text: "running " + label})
		case host.EventToolProgress:
			ui.prog.Send(statusMsg{text: "running " + ui.label(e.CallID) + ": " + progressText(e)})
			continue
		case host.EventToolResult:
			ui.prog.Send(statusMsg{text: "thinking"})
		case host.EventApproval:
			if note := local.reused(e); note != "" {
				p.Print(e)
				w.WriteString("  " + p.CallLabel(e) + " " + note + "\n")
				continue
			}
		case host.EventAssistant:
			// Its text was streamed.
			continue
		}
		p.Print(e)
	}
	ui.prog.Send(turnDoneMsg{end: end})
}

// uiWriter prints whole lines above the editor; it stands for a terminal,
// so that shown escapes what it prints.
type uiWriter struct{ ui *replUI }

func (w *uiWriter) Write(b []byte) (int, error) {
	w.ui.prog.Send(printMsg{text: string(b)})
	return len(b), nil
}

func (w *uiWriter) WriteString(s string) { _, _ = w.Write([]byte(s)) }

func (w *uiWriter) IsTerminal() bool { return true }

func firstLine(s string, n int) string {
	more := ""
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		more = fmt.Sprintf(" … (%d lines)", strings.Count(s, "\n")+1)
		s = s[:i]
	}
	return cmdutil.Truncate(s, n) + more
}
