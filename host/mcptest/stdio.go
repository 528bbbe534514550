package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agenthost/agenthost/host/mcptest/internal/record"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// maxLineBytes bounds one stdio message.
const maxLineBytes = 16 << 20

var errStreamClosed = errors.New("stream closed")

// stdioConn is one newline-delimited JSON-RPC connection.
type stdioConn struct {
	srv  *Server
	sess *session

	writeMu sync.Mutex
	w       io.Writer

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by wire.IDKey, for notifications/cancelled

	inputClosed chan struct{} // EOF: nobody will read answers to hanging requests
}

// newStdioConn is a connection writing to w, with a session of its own.
func (s *Server) newStdioConn(w io.Writer) *stdioConn {
	return &stdioConn{srv: s, sess: &session{}, w: w, inflight: map[string]context.CancelFunc{}, inputClosed: make(chan struct{})}
}

// ServeStdio serves one connection until r reaches EOF (then in-flight
// requests finish, hanging ones are dropped), ctx ends, or the server dies
// (ErrServerDied). On an early return r is closed when it is an io.Closer,
// which ends the goroutine blocked reading it.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	if err := s.startDelay(ctx); err != nil {
		return err
	}
	s.noise("serving stdio")
	ctx, cancel := context.WithCancel(ctx)
	c := s.newStdioConn(w)
	var handlers sync.WaitGroup
	defer func() {
		cancel()
		handlers.Wait()
		s.unsubscribe(c.sess.subscriber)
	}()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := readLine(br)
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()

	for {
		select {
		case line := <-lines:
			if !c.dispatch(ctx, &handlers, bytes.TrimSpace(line)) {
				closeReader(r)
				return ErrServerDied
			}
		case err := <-readErr:
			close(c.inputClosed)
			handlers.Wait()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading stdio: %w", err)
		case <-ctx.Done():
			closeReader(r)
			return ctx.Err()
		case <-s.died:
			closeReader(r)
			return ErrServerDied
		}
	}
}

func closeReader(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		_ = c.Close()
	}
}

// readLine reads up to '\n', refusing lines longer than maxLineBytes.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLineBytes {
			return nil, fmt.Errorf("line longer than %d bytes", maxLineBytes)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// dispatch handles one line; it returns false when the server must die.
func (c *stdioConn) dispatch(ctx context.Context, handlers *sync.WaitGroup, raw []byte) bool {
	s := c.srv
	msg, perr := wire.Parse(raw)
	method := ""
	if msg != nil {
		method = msg.Method
	}
	record.In(s.rec, "stdio", raw, method, nil)
	if perr != nil {
		var id json.RawMessage
		if msg != nil {
			id = msg.ID
		}
		_ = c.write(method, wire.NewResponse(id, nil, perr))
		return true
	}
	switch {
	case msg.IsRequest():
		if !s.admit() {
			return false
		}
		reqCtx, reqCancel := context.WithCancel(ctx)
		key := wire.IDKey(msg.ID)
		c.mu.Lock()
		c.inflight[key] = reqCancel
		c.mu.Unlock()
		x := &exchange{
			ctx: reqCtx, msg: msg, transport: "stdio", sess: c.sess,
			modern: s.isModern(msg, nil), send: c.notify, abandoned: c.inputClosed,
			request: func(r serverRequest) error { return c.write(r.Method, r) },
		}
		run := func() {
			defer func() {
				c.mu.Lock()
				delete(c.inflight, key)
				c.mu.Unlock()
				reqCancel()
			}()
			c.deliver(x, s.handle(x))
		}
		// Quick requests run inline so a piped script sees its effects in
		// order; only requests that block run beside the read loop, which
		// must stay free to read notifications/cancelled.
		if !s.mayBlock(msg) {
			run()
			return !s.dead()
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			run()
		}()
	case msg.Method == "" && msg.HasID():
		s.answered(msg)
	case msg.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(msg.Params, &p) == nil && len(p.RequestID) > 0 {
			c.mu.Lock()
			cancelRequest := c.inflight[wire.IDKey(p.RequestID)]
			c.mu.Unlock()
			if cancelRequest != nil {
				cancelRequest()
			}
		}
	}
	return true // other notifications and client responses need no answer
}

func (c *stdioConn) deliver(x *exchange, rep reply) {
	if rep.silent || x.ctx.Err() != nil {
		return // cancelled requests get no answer
	}
	if rep.garbage != nil {
		_ = c.writeRaw(x.msg.Method, append(rep.garbage, '\n'))
		return
	}
	if rep.listen != nil {
		final, ok := c.srv.runListen(x, rep.listen, c.notify)
		if ok {
			_ = c.write(x.msg.Method, wire.NewResponse(x.msg.ID, final, nil))
		}
		return
	}
	for _, n := range rep.before {
		_ = c.notify(n)
	}
	_ = c.write(x.msg.Method, wire.NewResponse(x.msg.ID, rep.resultOrNil(), rep.err))
}

func (c *stdioConn) notify(n wire.Notification) error { return c.write(n.Method, n) }

func (c *stdioConn) write(method string, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", method, err)
	}
	return c.writeRaw(method, append(line, '\n'))
}

func (c *stdioConn) writeRaw(method string, line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.srv.dead() {
		return errStreamClosed // a dead process says nothing more
	}
	// Recorded before writing, so a test that has the answer finds it.
	record.Out(c.srv.rec, "stdio", method, bytes.TrimSpace(line))
	if _, err := c.w.Write(line); err != nil {
		return fmt.Errorf("writing stdio: %w", err)
	}
	return nil
}
