package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

// listen runs f's server with ListenAndServe (its config must listen on
// 127.0.0.1:0) until the test ends and returns the bound address.
func (f *fixture) listen() string {
	t := f.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- f.srv.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	})
	select {
	case a := <-addrc:
		return a.String()
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	return ""
}

// rawRequest sends one HTTP/1.1 request on c and reads its answer.
func rawRequest(c net.Conn, br *bufio.Reader, req string) (*http.Response, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, err
}

// serverGaveUp reports whether, by deadline, the server answered on c or
// closed it: a read ends other than by the deadline.
func serverGaveUp(c net.Conn, deadline time.Time) bool {
	_ = c.SetReadDeadline(deadline)
	_, err := c.Read(make([]byte, 1))
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestIdleConnectionsCannotStarveTheServer: a client that opens many
// connections, sends one request on each and goes silent holds at most
// serve.maxConnectionsPerClient of them (the longest idle are closed to
// make room); an authenticated caller from the same address is still
// served, and the connections left are closed after serve.idleTimeout.
func TestIdleConnectionsCannotStarveTheServer(t *testing.T) {
	const (
		flood     = 300
		perClient = 20
		idle      = time.Second
	)
	f := newFixture(t, func(c *config.Serve) {
		c.Listen = "127.0.0.1:0"
		c.MaxConnections = 2 * perClient
		c.MaxConnectionsPerClient = perClient
		c.IdleTimeout = idle
	})
	addr := f.listen()
	conns := make([]net.Conn, 0, flood)
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	for range flood {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		// A connection closed to make room may be this one, before it is
		// answered: that is the point.
		_, _ = rawRequest(c, bufio.NewReader(c), "GET /healthz HTTP/1.1\r\nHost: agenthost\r\n\r\n")
	}

	client := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/sessions", strings.NewReader(`{"subject":"carol"}`))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("an authenticated caller was not served under the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create session under the flood: %d", resp.StatusCode)
	}

	// The connections closed to make room were closed before the request
	// above; the others are open.
	var open []net.Conn
	for _, c := range conns {
		if !serverGaveUp(c, time.Now().Add(50*time.Millisecond)) {
			open = append(open, c)
		}
	}
	if len(open) > perClient {
		t.Fatalf("the server holds %d of the flood's %d idle connections, want at most serve.maxConnectionsPerClient (%d)", len(open), flood, perClient)
	}
	deadline := time.Now().Add(idle + 3*time.Second)
	for i, c := range open {
		if !serverGaveUp(c, deadline) {
			t.Fatalf("idle connection %d of %d still open after serve.idleTimeout (%v)", i+1, len(open), idle)
		}
	}
}

// TestRequestsAreTimedButStreamsAreNot: a request whose body stops coming
// is given up after serve.readTimeout; an event stream (approvals, a
// turn's) outlives both serve.readTimeout and serve.writeTimeout.
func TestRequestsAreTimedButStreamsAreNot(t *testing.T) {
	const timeout = 300 * time.Millisecond
	f := newFixture(t, func(c *config.Serve) {
		c.Listen = "127.0.0.1:0"
		c.ReadTimeout, c.WriteTimeout = timeout, timeout
	})
	addr := f.listen()
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	open := func(method, path, token, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
		return resp
	}
	idleLongerThanTimeouts := func() { time.Sleep(3 * timeout) }
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a body that stops coming", func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, "POST /v1/sessions HTTP/1.1\r\nHost: agenthost\r\nAuthorization: Bearer "+apiToken+
				"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"subj")
			if !serverGaveUp(c, time.Now().Add(5*time.Second)) {
				t.Fatalf("a request whose body stopped was still waited for after serve.readTimeout (%v)", timeout)
			}
		}},
		{"approvals stream", func(t *testing.T) {
			resp := open("GET", "/v1/approvals/events", aliceToken, "")
			br := bufio.NewReader(resp.Body)
			if _, err := readSSE(io.LimitReader(br, int64(len(": approvals\n\n"))), nil); err != nil {
				t.Fatal(err)
			}
			idleLongerThanTimeouts()
			f.srv.watch.publish("pending", "apr_late")
			evs, err := readSSE(br, func(parsedEvent) bool { return true })
			if err != nil || len(evs) != 1 || evs[0].name != "pending" {
				t.Fatalf("after the timeouts the stream gave %v, %v; want the pending event", evs, err)
			}
		}},
		{"turn stream", func(t *testing.T) {
			s := f.createSession(map[string]string{"token": "t"})
			resp := open("POST", "/v1/sessions/"+s.ID+"/turns", apiToken, `{"message":"call db__delete_rows {}"}`)
			p := f.waitPending()
			idleLongerThanTimeouts()
			if status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"}); status != http.StatusOK {
				t.Fatalf("vote: %d %s", status, body)
			}
			evs, err := readSSE(resp.Body, nil)
			if err != nil || len(evs) == 0 || evs[len(evs)-1].name != "session_end" || !strings.Contains(evs[len(evs)-1].data, `"reason":"done"`) {
				t.Fatalf("after the timeouts the turn's stream gave %v, %v; want it to run to session_end done", evs, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

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
			l := newConnLimiter(pl, tc.max, tc.perClient)
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
				l.connState(served[i], http.StateActive)
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
func peerClosed(c net.Conn) bool { return serverGaveUp(c, time.Now().Add(time.Second)) }

// peerClosedNow reports whether the other end of c is closed already.
func peerClosedNow(c net.Conn) bool { return serverGaveUp(c, time.Now().Add(20*time.Millisecond)) }

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
