package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
)

// terminalFlag is implemented by writers that know whether they are a
// terminal (tests use it to stand in for one).
type terminalFlag interface{ IsTerminal() bool }

// isTerminal reports whether w shows text to a person on a terminal.
func isTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case terminalFlag:
		return w.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(w.Fd()))
	}
	return false
}

// shown is s as printed on w. Text from servers, models and plugins can
// hold escape sequences (ESC, OSC, BEL, CR) that move the cursor, rewrite
// the screen or forge an approval prompt; on a terminal they are escaped as
// the approval prompt escapes them, newlines and tabs kept. Elsewhere (a
// pipe, a file) the text is printed as it is.
func shown(w io.Writer, s string) string {
	if isTerminal(w) {
		return terminal.TerminalText(s)
	}
	return s
}
