// Package wirecheck owns what a message from an MCP server must be before
// the host takes it: the ProtocolError that says why one was refused, the
// check of a framed message's shape (MessageProblem), the bounded line
// reader of a stdio server's stdout (LineGuard), and the requests in flight
// that such a message fails at once (Pending). It knows nothing of a
// connection; mcpconn and its transports build on it.
package wirecheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// ErrProtocol matches every [*ProtocolError]: errors.Is(err, ErrProtocol).
var ErrProtocol = errors.New("protocol error")

// ProtocolError is a server message the host could not take: not JSON-RPC,
// or larger than limits.maxResponseBytes. Its message says what was wrong
// and never quotes the message.
type ProtocolError struct{ msg string }

// Error says what was wrong with the message, without quoting it.
func (e *ProtocolError) Error() string { return e.msg }

// Is makes every *ProtocolError match ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// Problem is a ProtocolError with msg as its message; msg must not quote
// the server's message.
func Problem(msg string) *ProtocolError { return &ProtocolError{msg: msg} }

// InvalidMessage is the error of a message that is not JSON-RPC, for the
// reason MessageProblem gives.
func InvalidMessage(reason string) *ProtocolError {
	return &ProtocolError{msg: "server sent a response that is not valid JSON-RPC: " + reason}
}

// MessageTooLarge is the error of a message over limit bytes.
func MessageTooLarge(limit int64) *ProtocolError {
	return &ProtocolError{msg: fmt.Sprintf("server sent a message larger than %s (limits.maxResponseBytes)", ByteSize(limit))}
}

// ByteSize renders a byte count for a person: 64 MiB, 1.5 KiB, 300 bytes.
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// MessageProblem says why one framed message (a stdio line, an SSE event's
// data) cannot be a JSON-RPC message, or "" when it can. It looks only at
// the shape a message needs: valid JSON (encoding/json's nesting limit
// included) and an object, JSON's whitespace allowed around it. mcp-go
// drops such a message without a word, so the request it answered would
// wait for its timeout.
func MessageProblem(msg []byte) string {
	if json.Valid(msg) {
		if bytes.TrimLeft(msg, " \t\r\n")[0] != '{' {
			return "not a JSON object"
		}
		return ""
	}
	// The slow path, for a message that is already wrong.
	var syntax *json.SyntaxError
	switch err := json.Unmarshal(msg, new(struct{})); {
	case err == nil:
		return "not JSON"
	case strings.HasSuffix(err.Error(), "exceeded max depth"):
		return "nested too deeply"
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON (syntax error at byte %d)", syntax.Offset)
	default:
		return "not JSON"
	}
}

// Pending are a connection's requests in flight. A message that
// cannot be attributed to one request (a garbage line on stdio, a bad
// event on a shared SSE stream) fails them all at once rather than leave
// each to its timeout.
type Pending struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]context.CancelCauseFunc
}

type requestFailKey struct{}

// OwnFail is the function that fails the one request of ctx (Track with
// own), for a reader of that request's own response stream.
func OwnFail(ctx context.Context) (func(*ProtocolError), bool) {
	own, ok := ctx.Value(requestFailKey{}).(context.CancelCauseFunc)
	if !ok {
		return nil, false
	}
	return func(err *ProtocolError) { own(err) }, true
}

// Track gives a request a context that FailAll (and, with own set, the
// request's own response stream) can end with a *ProtocolError; Done(id,
// cancel) must be called when the request is over.
func (p *Pending) Track(ctx context.Context, own bool) (context.Context, uint64, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if own {
		ctx = context.WithValue(ctx, requestFailKey{}, cancel)
	}
	p.mu.Lock()
	if p.m == nil {
		p.m = make(map[uint64]context.CancelCauseFunc)
	}
	p.next++
	id := p.next
	p.m[id] = cancel
	p.mu.Unlock()
	return ctx, id, cancel
}

// Done forgets a tracked request and releases its context.
func (p *Pending) Done(id uint64, cancel context.CancelCauseFunc) {
	p.mu.Lock()
	delete(p.m, id)
	p.mu.Unlock()
	cancel(nil)
}

// FailAll ends every request in flight with err.
func (p *Pending) FailAll(err *ProtocolError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.m {
		cancel(err)
	}
}

// Len is the number of requests tracked.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

// ProtocolCause is the *ProtocolError that ended a tracked request, if any.
func ProtocolCause(ctx context.Context) error {
	var pe *ProtocolError
	if cause := context.Cause(ctx); errors.As(cause, &pe) {
		return pe
	}
	return nil
}

// LineGuard reads a stdio server's stdout one line at a time, at most max
// bytes a line, for the stdio transport. An oversized line is skipped without being
// held in memory and reported to fail; blank lines are skipped. mcp-go
// would read any line whole.
type LineGuard struct {
	src  *bufio.Reader
	max  int64
	fail func(*ProtocolError)

	buf []byte // a line longer than src's buffer, assembled
}

// BigLine: a line buffer grown past this is dropped once handed on, so a
// connection does not keep its largest message's buffer for life.
const BigLine = 1 << 20

func NewLineGuard(src io.Reader, max int64, fail func(*ProtocolError)) *LineGuard {
	return &LineGuard{src: bufio.NewReaderSize(src, 64<<10), max: max, fail: fail}
}

// Reset makes src the stream read, the buffered bytes dropped.
func (g *LineGuard) Reset(src io.Reader) { g.src.Reset(src) }

// ReadLine returns the next line that is not blank and not too long,
// without its surrounding space, or the source's error once it has ended.
// A line that fits src's buffer is returned from there, without a copy:
// it is valid until the next call. An unterminated last line is not a
// message (mcp-go drops it too).
func (g *LineGuard) ReadLine() ([]byte, error) {
	for {
		line, err := g.next()
		if err != nil {
			return nil, err
		}
		if msg := bytes.TrimSpace(line); len(msg) > 0 {
			return msg, nil
		}
	}
}

// next reads one line, or nil for a line that was too long.
func (g *LineGuard) next() ([]byte, error) {
	if cap(g.buf) > BigLine {
		g.buf = nil
	}
	chunk, err := g.src.ReadSlice('\n')
	if err == nil {
		if int64(len(chunk)) > g.max {
			g.fail(MessageTooLarge(g.max))
			return nil, nil
		}
		return chunk, nil
	}
	// A line longer than src's buffer, or the end of the stream.
	g.buf = g.buf[:0]
	tooLong := false
	for {
		if !tooLong {
			if int64(len(g.buf)+len(chunk)) > g.max {
				tooLong = true
				g.buf = g.buf[:0]
			} else {
				g.buf = append(g.buf, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
		chunk, err = g.src.ReadSlice('\n')
	}
	if err != nil {
		g.buf = g.buf[:0]
		return nil, err
	}
	if tooLong {
		g.fail(MessageTooLarge(g.max))
		return nil, nil
	}
	return g.buf, nil
}
