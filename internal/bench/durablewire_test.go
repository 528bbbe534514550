package bench

import (
	byteorder "encoding/binary"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// wireCounter is a TCP proxy in front of PostgreSQL that counts the round
// trips its clients make (each Sync or simple query ends one: a pipeline
// of statements is one), filed under the owner of their statements:
// "engine" (DBOS's schema and its read-write transactions), "serve"
// (serve's shared tables), "adapter" (host/durable's tables, its commit
// mode, the deallocation of a database/sql statement) or "other". It
// reads the protocol's messages and passes the bytes on unchanged.
type wireCounter struct {
	target string
	mu     sync.Mutex
	on     bool
	counts map[string]int
}

// newWireCounter listens on loopback for the server dsn names and returns
// the DSN that goes through it; closed with tb.
func newWireCounter(tb testing.TB, dsn string) (*wireCounter, string) {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	w := &wireCounter{target: u.Host, counts: map[string]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go w.relay(c)
		}
	}()
	u.Host = ln.Addr().String()
	return w, u.String()
}

// counting starts or stops the count; take returns it and starts anew.
func (w *wireCounter) counting(on bool) {
	w.mu.Lock()
	w.on = on
	w.mu.Unlock()
}

func (w *wireCounter) take() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.counts
	w.counts = map[string]int{}
	return m
}

// relay passes one client connection's bytes to the server and back,
// reading the client's messages (the startup packet first, which has no
// type byte).
func (w *wireCounter) relay(c net.Conn) {
	defer c.Close()
	s, err := net.Dial("tcp", w.target)
	if err != nil {
		return
	}
	defer s.Close()
	go func() { _, _ = io.Copy(c, s); _ = c.Close() }()
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return
	}
	startup := make([]byte, byteorder.BigEndian.Uint32(n[:])-4)
	if _, err := io.ReadFull(c, startup); err != nil {
		return
	}
	_, _ = s.Write(append(n[:], startup...))
	conn := wireConn{named: map[string]string{}}
	for {
		var h [5]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		body := make([]byte, byteorder.BigEndian.Uint32(h[1:])-4)
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if _, err := s.Write(append(h[:], body...)); err != nil {
			return
		}
		if owner, done := conn.message(h[0], body); done {
			w.mu.Lock()
			if w.on {
				w.counts[owner]++
			}
			w.mu.Unlock()
		}
	}
}

// wireConn is one connection's state: its prepared statements' texts,
// the owner of its open transaction, and the round trip being read.
type wireConn struct {
	named   map[string]string
	txOwner string
	owner   string // of the round trip so far ("" none yet)
	closes  bool   // it closes a statement
}

// message reads one client message; done reports the end of a round trip
// and its owner.
func (c *wireConn) message(typ byte, body []byte) (owner string, done bool) {
	switch typ {
	case 'P': // Parse: name, query
		name, rest := cString(body)
		q, _ := cString(rest)
		c.named[name] = q
		c.statement(q)
	case 'B': // Bind: portal, statement
		_, rest := cString(body)
		name, _ := cString(rest)
		c.statement(c.named[name])
	case 'C': // Close
		c.closes = true
	case 'Q': // a simple query ends its round trip
		q, _ := cString(body)
		c.statement(q)
		return c.end(), true
	case 'S': // Sync
		return c.end(), true
	}
	return "", false
}

func (c *wireConn) statement(q string) {
	q = strings.ToLower(strings.TrimSpace(q))
	var owner string
	switch {
	case strings.HasPrefix(q, "begin"):
		c.txOwner = "adapter"
		if strings.Contains(q, "read write") { // DBOS's transactions
			c.txOwner = "engine"
		}
		owner = c.txOwner
	case q == "commit" || q == "rollback":
		owner, c.txOwner = c.txOwner, ""
	case strings.Contains(q, `"dbos".`) || strings.Contains(q, "dbos."):
		owner = "engine"
	case strings.Contains(q, "agenthost_served_sessions") || strings.Contains(q, "agenthost_turn_events"):
		owner = "serve"
	case strings.Contains(q, "agenthost_") || strings.Contains(q, "synchronous_commit"):
		owner = "adapter"
	}
	if c.owner == "" || c.owner == "other" {
		c.owner = owner
	}
}

func (c *wireConn) end() string {
	owner := c.owner
	switch {
	case owner == "" && c.closes:
		owner = "adapter" // a database/sql statement's deallocation
	case owner == "":
		owner = "other"
	}
	c.owner, c.closes = "", false
	return owner
}

func cString(b []byte) (string, []byte) {
	for i, x := range b {
		if x == 0 {
			return string(b[:i]), b[i+1:]
		}
	}
	return string(b), nil
}

// servedRoundTrips counts the round trips of served durable turns on
// PostgreSQL, by owner, per turn: a fixture of its own (serve's shared
// mode on a new database) through a wireCounter; a first session's three
// turns warm it up, then three sessions' three turns each are counted,
// one turn at a time (the engine's background polls meanwhile are
// counted too).
func servedRoundTrips(tb *testing.B) map[string]float64 {
	tb.Helper()
	w, dsn := newWireCounter(tb, postgresDSN(tb))
	f := newServeFixtureOn(tb, dsn)
	turns := 0
	for session := range 4 {
		id, err := f.createSession()
		if err != nil {
			tb.Fatal(err)
		}
		for range serveTurnsPerSess {
			w.counting(session > 0)
			resp, err := f.post("/v1/sessions/"+id+"/turns", map[string]any{"message": "look it up"})
			if err != nil {
				tb.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"reason":"done"`) {
				tb.Fatalf("a served turn did not end done: %s", body)
			}
			time.Sleep(50 * time.Millisecond) // its last writes (the turn's end) are in
			w.counting(false)
			if session > 0 {
				turns++
			}
		}
		f.deleteSession(id)
	}
	per := map[string]float64{}
	for owner, n := range w.take() {
		per[owner] = float64(n) / float64(turns)
		per["total"] += float64(n) / float64(turns)
	}
	return per
}
