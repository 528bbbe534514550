package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"time"
)

// LoginOptions configure an interactive login on a loopback redirect.
type LoginOptions struct {
	// Subject the token will act for.
	Subject string
	// Scopes to request; nil selects them (see Config.Scopes).
	Scopes []string
	// Open sends the person's browser to the authorization URL (runs
	// $BROWSER, or prints the URL). Required.
	Open func(ctx context.Context, authURL string) error
	// Addr is the loopback address to listen on; "127.0.0.1:0" when empty.
	Addr string
}

// Login runs the authorization code grant for one subject: it listens on
// a loopback port (RFC 8252 §7.3), opens the authorization URL, waits for
// the redirect and exchanges the code. It returns when the token is
// stored, the authorization failed, or ctx ends.
func (c *Client) Login(ctx context.Context, opts LoginOptions) error {
	if opts.Open == nil {
		return errors.New("oauth: Login needs an Open function")
	}
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("oauth: listening for the redirect: %w", err)
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	authURL, state, err := c.StartAuthorization(ctx, AuthRequest{Subject: opts.Subject, RedirectURI: redirect, Scopes: opts.Scopes})
	if err != nil {
		ln.Close()
		return err
	}
	done := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("state") != state {
			// Not this login's answer: ignore it and keep waiting.
			http.Error(w, "unknown authorization state", http.StatusBadRequest)
			return
		}
		_, err := c.CompleteAuthorization(r.Context(), q)
		writeResult(w, err)
		select {
		case done <- err:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}()
	if err := opts.Open(ctx, authURL); err != nil {
		return fmt.Errorf("oauth: opening the browser: %w", err)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("oauth: waiting for the authorization redirect: %w", context.Cause(ctx))
	}
}

// CallbackHandler completes authorizations started by this Client (with a
// RedirectURI that routes to the handler). done, when not nil, is told the
// subject and the outcome of each completed redirect. Mount it on the
// backend's HTTP server.
func (c *Client) CallbackHandler(done func(subject string, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		subject, err := c.CompleteAuthorization(r.Context(), r.URL.Query())
		if errors.Is(err, ErrInvalidState) {
			http.Error(w, "unknown or expired authorization", http.StatusBadRequest)
			return
		}
		if done != nil {
			done(subject, err)
		}
		writeResult(w, err)
	})
}

func writeResult(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<!doctype html><title>Authorization failed</title><p>Authorization failed: %s</p>\n", html.EscapeString(err.Error()))
		return
	}
	fmt.Fprint(w, "<!doctype html><title>Authorized</title><p>Authorized. You can close this window.</p>\n")
}
