// Package errtidy owns the message of a connection error as the user
// sees it: one readable line, with the error's chain kept for errors.Is
// and errors.As (Tidy).
package errtidy

import (
	"strings"
	"unicode/utf8"
)

// Tidy keeps err for errors.Is/As but makes its message one readable
// line: a segment repeated right after itself is dropped (mcp-go wraps
// some failures twice: "failed to send request: failed to send request:
// Post ..."), an HTML error page a server answered with is left out (only
// its status stays), white space runs become one space, and the message
// is cut at MaxText bytes.
func Tidy(err error) error {
	msg := err.Error()
	parts := strings.Split(msg, ": ")
	kept := parts[:1]
	for _, p := range parts[1:] {
		if p != kept[len(kept)-1] {
			kept = append(kept, p)
		}
	}
	tidy := strings.Join(kept, ": ")
	if i := htmlStart(tidy); i >= 0 {
		tidy = strings.TrimRight(tidy[:i], " :\n\t") + " (an HTML page, left out)"
	}
	tidy = strings.Join(strings.Fields(tidy), " ")
	if len(tidy) > MaxText {
		cut := MaxText
		for cut > 0 && !utf8.RuneStart(tidy[cut]) {
			cut--
		}
		tidy = tidy[:cut] + "…"
	}
	if tidy == msg {
		return err
	}
	return &tidiedError{msg: tidy, err: err}
}

// MaxText bounds a connection error's message (a server's error body
// can be anything).
const MaxText = 400

// htmlStart is where an HTML document starts in msg, or -1.
func htmlStart(msg string) int {
	lower := strings.ToLower(msg)
	for _, tag := range []string{"<!doctype html", "<html"} {
		if i := strings.Index(lower, tag); i >= 0 {
			return i
		}
	}
	return -1
}

type tidiedError struct {
	msg string
	err error
}

func (e *tidiedError) Error() string { return e.msg }
func (e *tidiedError) Unwrap() error { return e.err }
