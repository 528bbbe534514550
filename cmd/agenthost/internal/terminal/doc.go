// Package terminal owns the CLI's terminal: a line reader that several
// readers share without reading ahead ([Input]), the terminal approver
// that asks a person ([Prompt], [Asker]) and the escaping of what it
// shows ([TerminalText]).
package terminal
