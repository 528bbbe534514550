// Package connlimit bounds the connections an HTTP server holds open, in
// all and per client address (an IPv4 address, an IPv6 /64), closing the
// longest idle to make room, so that silent connections cannot starve the
// callers with work to do (serve.maxConnections,
// serve.maxConnectionsPerClient).
package connlimit

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
)

// Listener is the listener of serve's ListenAndServe. It bounds the
// connections open at once, in all (serve.maxConnections) and from one
// client address (serve.maxConnectionsPerClient), so that a client that opens connections
// and leaves them silent cannot hold every file descriptor and starve the
// callers that have work to do.
//
// At a bound, the connection that has waited longest for a request (just
// accepted, or kept alive between requests) is closed to make room:
// closing it interrupts nothing, and an HTTP client opens a new one. When
// every connection is busy with a request, a new connection from a client
// at its own bound is closed at once, and at the total bound accepting
// waits until one ends (the server's timeouts bound how long a request
// may take to arrive).
//
// It learns whether a connection waits for a request from the server's
// ConnState hook (ConnState).
type Listener struct {
	net.Listener
	max, perClient int

	mu      sync.Mutex
	total   int
	clients map[string]*connClient
	idle    list.List     // *limitedConn waiting for a request, longest first
	freed   chan struct{} // closed when a connection ends or waits; nil while nobody waits for that
	closed  bool
}

// connClient is one client address's connections.
type connClient struct {
	n    int
	idle list.List // its *limitedConn waiting for a request, longest first
}

// limitedConn is a connection Listener counts.
type limitedConn struct {
	net.Conn
	l      *Listener
	client string

	// Under l.mu.
	gone             bool
	idleAt, clientAt *list.Element // set while it waits for a request
}

// New bounds ln to max connections open at once, perClient of them from
// one client.
func New(ln net.Listener, max, perClient int) *Listener {
	return &Listener{Listener: ln, max: max, perClient: perClient, clients: map[string]*connClient{}}
}

// Accept returns the next connection within the bounds.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, err := l.admit(c)
		if err != nil {
			return nil, err
		}
		if lc != nil {
			return lc, nil
		}
	}
}

// admit counts c in, making room first; nil means c was refused (closed).
func (l *Listener) admit(c net.Conn) (net.Conn, error) {
	key := clientKey(c.RemoteAddr())
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return nil, net.ErrClosed
		}
		cl := l.clients[key]
		var victim *limitedConn
		switch {
		case cl != nil && cl.n >= l.perClient:
			if victim = oldest(&cl.idle); victim == nil {
				l.mu.Unlock()
				_ = c.Close()
				return nil, nil
			}
		case l.total >= l.max:
			if victim = oldest(&l.idle); victim == nil {
				if l.freed == nil {
					l.freed = make(chan struct{})
				}
				freed := l.freed
				l.mu.Unlock()
				<-freed
				continue
			}
		default:
			if cl == nil {
				cl = &connClient{}
				l.clients[key] = cl
			}
			lc := &limitedConn{Conn: c, l: l, client: key}
			l.total++
			cl.n++
			l.waitsLocked(lc, cl) // until its first request comes
			l.mu.Unlock()
			return lc, nil
		}
		l.releaseLocked(victim)
		l.mu.Unlock()
		_ = victim.Conn.Close()
	}
}

func oldest(idle *list.List) *limitedConn {
	if e := idle.Front(); e != nil {
		return e.Value.(*limitedConn)
	}
	return nil
}

// Close closes the listener and wakes an Accept that waits for room.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	l.wakeLocked()
	l.mu.Unlock()
	return l.Listener.Close()
}

// ConnState is the server's ConnState hook: a connection waits for a
// request when it is new or idle, and is busy while a request runs.
func (l *Listener) ConnState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok || lc.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.gone {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		if lc.idleAt == nil {
			l.waitsLocked(lc, l.clients[lc.client])
		}
	case http.StateActive, http.StateHijacked:
		l.busyLocked(lc)
	case http.StateClosed:
		l.releaseLocked(lc)
	}
}

func (l *Listener) waitsLocked(lc *limitedConn, cl *connClient) {
	lc.idleAt = l.idle.PushBack(lc)
	lc.clientAt = cl.idle.PushBack(lc)
	l.wakeLocked()
}

func (l *Listener) busyLocked(lc *limitedConn) {
	if lc.idleAt != nil {
		l.idle.Remove(lc.idleAt)
		l.clients[lc.client].idle.Remove(lc.clientAt)
		lc.idleAt, lc.clientAt = nil, nil
	}
}

// releaseLocked stops counting lc (once).
func (l *Listener) releaseLocked(lc *limitedConn) {
	if lc.gone {
		return
	}
	l.busyLocked(lc)
	lc.gone = true
	l.total--
	cl := l.clients[lc.client]
	if cl.n--; cl.n == 0 {
		delete(l.clients, lc.client)
	}
	l.wakeLocked()
}

func (l *Listener) wakeLocked() {
	if l.freed != nil {
		close(l.freed)
		l.freed = nil
	}
}

// Close closes the connection and stops counting it.
func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection: net/http does so before closing
// after an answer it must not follow with a reset (it looks for the
// method, which embedding the net.Conn would hide).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// open reports the connections counted (tests).
func (l *Listener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// clientKey is the client a remote address belongs to: its IPv4 address,
// or its IPv6 /64 network (one host is usually given a whole /64).
func clientKey(addr net.Addr) string {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return addr.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
