package connlimit

import (
	"errors"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"
)

// pipeListener hands out one end of net.Pipe pairs, each with the remote
// address the test names.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func (p *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}
func (p *pipeListener) Close() error   { close(p.closed); return nil }
func (p *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestConnLimiterMakesRoom: at a client's bound its own longest-idle
// connection is closed (never another client's), at the total bound
// anyone's longest idle; with every connection busy, a client at its
// bound is refused and, at the total bound, accepting waits for one to end.
func TestConnLimiterMakesRoom(t *testing.T) {
	a, b := "192.0.2.1:1000", "198.51.100.7:2000"
	tests := []struct {
		name           string
		max, perClient int
		clients        []string // connections, in order, by remote address
		busy           []int    // of those, the ones running a request
		next           string   // one more connection's address
		closed         []int    // connections the server closes for it
		refused        bool     // the next one is closed at once
		waits          bool     // accepting it waits until a connection ends
	}{
		{"client bound closes its own longest idle", 10, 2, []string{a, b, a}, nil, a, []int{0}, false, false},
		{"client bound skips busy connections", 10, 2, []string{a, a}, []int{0}, a, []int{1}, false, false},
		{"total bound closes anyone's longest idle", 3, 3, []string{b, a, a}, nil, a, []int{0}, false, false},
		{"client bound with all busy refuses", 10, 2, []string{a, a, b}, []int{0, 1}, a, nil, true, false},
		{"total bound with all busy waits", 2, 2, []string{a, b}, []int{0, 1}, a, nil, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
			l := New(pl, tc.max, tc.perClient)
			t.Cleanup(func() { _ = l.Close() })
			dial := func(addr string) (client net.Conn, accepted <-chan net.Conn) {
				srv, cli := net.Pipe()
				ap, _ := net.ResolveTCPAddr("tcp", addr)
				out := make(chan net.Conn, 1)
				go func() {
					if c, err := l.Accept(); err == nil {
						out <- c
					}
				}()
				pl.conns <- addrConn{Conn: srv, remote: ap}
				t.Cleanup(func() { _ = cli.Close() })
				return cli, out
			}
			var clients, served []net.Conn
			for _, addr := range tc.clients {
				cli, acc := dial(addr)
				clients, served = append(clients, cli), append(served, <-acc)
			}
			for _, i := range tc.busy {
				l.ConnState(served[i], http.StateActive)
			}
			cli, acc := dial(tc.next)
			if tc.waits {
				select {
				case <-acc:
					t.Fatal("accepted beyond serve.maxConnections with every connection busy")
				case <-time.After(100 * time.Millisecond):
				}
				_ = served[0].Close()
			}
			if tc.refused {
				if !peerClosed(cli) {
					t.Fatal("the connection beyond the client's bound was not refused")
				}
				if got := l.open(); got != len(tc.clients) {
					t.Fatalf("%d connections counted, want %d", got, len(tc.clients))
				}
			} else {
				<-acc
			}
			for i, c := range clients {
				want := slices.Contains(tc.closed, i)
				if i == 0 && tc.waits {
					continue // the test closed it
				}
				if got := peerClosedNow(c); got != want {
					t.Errorf("connection %d (%s) closed: %v, want %v", i, tc.clients[i], got, want)
				}
			}
			if got, want := l.open(), min(len(tc.clients)+1-len(tc.closed), tc.max); !tc.refused && got != want {
				t.Errorf("%d connections counted, want %d", got, want)
			}
		})
	}
}

// peerClosed waits (a little) for the other end of c to close.
func peerClosed(c net.Conn) bool { return peerClosedWithin(c, time.Second) }

// peerClosedNow reports whether the other end of c is closed already.
func peerClosedNow(c net.Conn) bool { return peerClosedWithin(c, 20*time.Millisecond) }

// peerClosedWithin reports whether, within d, a read of c ends other than
// by the deadline: the other end closed (or wrote).
func peerClosedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.Read(make([]byte, 1))
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

func TestClientKey(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"192.0.2.1:80", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:80", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
	}
	for _, tc := range tests {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientKey(a); got != tc.want {
			t.Errorf("clientKey(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
