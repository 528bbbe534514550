package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
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
