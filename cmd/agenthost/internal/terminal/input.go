package terminal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrLineTooLong is returned by Input.ReadLine for a line longer than the
// Input's limit; the line is consumed and dropped.
var ErrLineTooLong = errors.New("input line too long")

// ErrInputClosed is returned by Input.ReadLine after Close.
var ErrInputClosed = errors.New("input closed")

// Input is the one reader of a terminal's lines, shared by everyone who
// reads them: a REPL, the approval Prompt, a server's questions. Lines are
// handed to whoever asks, one asker at a time. A read is started only when
// someone asks, and reads one byte at a time, so Input takes nothing beyond
// the line asked for. An asker that gives up (its ctx ends) leaves the read
// in flight to the next asker: the next line typed goes to whoever asks
// next, not to the one that gave up. End of input (or a read error) is
// sticky: every later ReadLine returns it.
//
// The reader goroutine starts with the first ReadLine and stops when the
// input ends or fails, or after Close once no read is in flight.
type Input struct {
	in  io.Reader
	max int
	now func() time.Time

	asker   chan struct{} // one asker at a time; the holder owns reading and ended
	reading bool          // a read is in flight; its line goes to the next asker
	ended   error

	start   sync.Once
	want    chan struct{}
	lines   chan inputLine
	done    chan struct{}
	stopped sync.Once
}

type inputLine struct {
	text    string
	tooLong bool
	err     error
	at      time.Time
}

// MaxInputLine is the longest line an Input created by NewInput hands out.
const MaxInputLine = 1 << 20

// NewInput returns an Input reading lines of up to MaxInputLine bytes
// from in.
func NewInput(in io.Reader) *Input { return newInput(in, MaxInputLine) }

func newInput(in io.Reader, max int) *Input {
	return &Input{
		in: in, max: max, now: time.Now,
		asker: make(chan struct{}, 1),
		want:  make(chan struct{}),
		lines: make(chan inputLine, 1),
		done:  make(chan struct{}),
	}
}

// Close stops the reader goroutine (after the read in flight, if any);
// later ReadLine calls return ErrInputClosed.
func (in *Input) Close() error {
	in.stopped.Do(func() { close(in.done) })
	return nil
}

// ReadLine returns the next line, without its newline. A line that was
// read for an asker that gave up is returned to the next asker. End of
// input (a line without a newline included) is io.EOF.
func (in *Input) ReadLine(ctx context.Context) (string, error) {
	return in.readLine(ctx, time.Time{})
}

// readLine is ReadLine that skips lines completed before since (typed
// before a question was shown).
func (in *Input) readLine(ctx context.Context, since time.Time) (string, error) {
	select {
	case in.asker <- struct{}{}:
		defer func() { <-in.asker }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if in.ended != nil {
		return "", in.ended
	}
	in.start.Do(func() { go in.readLoop() })
	for {
		if !in.reading {
			select {
			case in.want <- struct{}{}:
				in.reading = true
			case <-in.done:
				return "", ErrInputClosed
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		var line inputLine
		select {
		case line = <-in.lines:
			in.reading = false
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if line.err != nil {
			in.ended = line.err
			return "", line.err
		}
		if line.at.Before(since) {
			continue
		}
		if line.tooLong {
			return "", fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, in.max)
		}
		return line.text, nil
	}
}

func (in *Input) readLoop() {
	for {
		select {
		case <-in.done:
			return
		case <-in.want:
		}
		text, tooLong, err := readLine(in.in, in.max)
		in.lines <- inputLine{text: text, tooLong: tooLong, err: err, at: in.now()}
		if err != nil {
			return
		}
	}
}

// readLine reads up to '\n' without reading ahead, keeping at most max
// bytes (tooLong reports a longer line). It fails when the input ends
// before a newline.
func readLine(r io.Reader, max int) (string, bool, error) {
	var b []byte
	var one [1]byte
	tooLong := false
	for {
		n, err := r.Read(one[:])
		if n == 1 {
			if one[0] == '\n' {
				return string(b), tooLong, nil
			}
			if len(b) < max {
				b = append(b, one[0])
			} else {
				tooLong = true
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", false, io.EOF
			}
			return "", false, fmt.Errorf("read input: %w", err)
		}
	}
}
