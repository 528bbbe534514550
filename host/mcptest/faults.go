package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrServerDied is returned by the serve functions after a die fault (the
// tool behaviour "die" or Options.DieAfter). Main turns it into exit code 3.
var ErrServerDied = errors.New("mcptestserver: died on purpose")

// Died is closed when a die fault fires.
func (s *Server) Died() <-chan struct{} { return s.died }

func (s *Server) die() {
	s.dieOnce.Do(func() {
		s.noise("dying on purpose")
		close(s.died)
	})
}

func (s *Server) dead() bool {
	select {
	case <-s.died:
		return true
	default:
		return false
	}
}

// admit counts a request in arrival order and reports whether it may be
// handled; with DieAfter N the request N+1 kills the server instead.
func (s *Server) admit() bool {
	n := s.requests.Add(1)
	if s.opts.DieAfter > 0 && n > int64(s.opts.DieAfter) {
		s.die()
		return false
	}
	return !s.dead()
}

func (s *Server) noise(format string, args ...any) {
	if !s.opts.StderrNoise {
		return
	}
	s.noiseMu.Lock()
	defer s.noiseMu.Unlock()
	fmt.Fprintf(s.opts.Stderr, "mcptestserver noise: "+format+"\n", args...)
}

func (s *Server) startDelay(ctx context.Context) error {
	if s.opts.StartDelay <= 0 {
		return nil
	}
	timer := time.NewTimer(s.opts.StartDelay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("start delay: %w", ctx.Err())
	}
}

// corruptPage damages the first tool of a tools/list page (adding one when
// the page is empty) in the way kind names.
func corruptPage(items []json.RawMessage, kind string) []json.RawMessage {
	out := append([]json.RawMessage{}, items...)
	if len(out) == 0 {
		out = append(out, json.RawMessage(`{"name":"corrupt","inputSchema":{"type":"object"}}`))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(out[0], &fields) != nil || fields == nil {
		fields = map[string]json.RawMessage{"name": json.RawMessage(`"corrupt"`)}
	}
	switch kind {
	case MalformedNotObject:
		out[0] = json.RawMessage(`"not-a-tool"`)
		return out
	case MalformedNoName:
		delete(fields, "name")
	case MalformedSchemaString:
		fields["inputSchema"] = json.RawMessage(`"object"`)
	}
	encoded, err := json.Marshal(fields)
	if err == nil {
		out[0] = encoded
	}
	return out
}
