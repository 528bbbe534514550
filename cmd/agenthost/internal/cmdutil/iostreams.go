package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"golang.org/x/term"
)

// IOStreams are the command's standard streams: the process's in main,
// buffers in tests.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System is the process's own streams.
func System() *IOStreams { return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// StdinIsTerminal reports whether In is a terminal.
func (s *IOStreams) StdinIsTerminal() bool {
	f, ok := s.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalFlag is implemented by writers that know whether they are a
// terminal (tests use it to stand in for one).
type terminalFlag interface{ IsTerminal() bool }

// IsTerminal reports whether w shows text to a person on a terminal.
func IsTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case terminalFlag:
		return w.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(w.Fd()))
	}
	return false
}

// Shown is s as printed on w. Text from servers, models and plugins can
// hold escape sequences (ESC, OSC, BEL, CR) that move the cursor, rewrite
// the screen or forge an approval prompt; on a terminal they are escaped as
// the approval prompt escapes them, newlines and tabs kept. Elsewhere (a
// pipe, a file) the text is printed as it is.
func Shown(w io.Writer, s string) string {
	if IsTerminal(w) {
		return terminal.TerminalText(s)
	}
	return s
}

// WriteJSON writes v indented by two spaces, HTML characters as they are:
// the shape of every --json document but the sessions commands'.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteJSONLine writes v on one line, HTML characters as they are: the
// sessions commands' --json shape (docs/cli.md: every JSON output carries
// the text as it is).
func WriteJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Plural is "1 step", "2 steps".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Truncate is s on one line (newlines as spaces), cut to n runes with an
// ellipsis.
func Truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
