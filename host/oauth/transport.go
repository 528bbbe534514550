package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
)

type subjectKey struct{}

// WithSubject returns a context whose requests act for subject: the
// Transport uses that subject's token. The package takes the subject as
// given: whoever sets it (the host, from a session's subject) must only
// set a subject its caller may act for.
func WithSubject(ctx context.Context, subject string) context.Context {
	return context.WithValue(ctx, subjectKey{}, subject)
}

// SubjectFrom returns the subject set by WithSubject.
func SubjectFrom(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(subjectKey{}).(string)
	return s, ok
}

// ErrAuthorizationRequired is matched (errors.Is) by every
// *AuthorizationRequiredError.
var ErrAuthorizationRequired = errors.New("oauth: authorization required")

// AuthorizationRequiredError says that a request needs the subject to
// authorize (log in, or log in again with more scopes). It carries no
// secret.
type AuthorizationRequiredError struct {
	Subject  string
	Resource string
	// Scopes are the scopes the next authorization should request.
	Scopes []string
	// StepUp is set when the server refused the token for insufficient
	// scope (403), rather than for a missing or invalid one (401).
	StepUp bool
	// AuthURL is the URL for the subject's browser, when the Transport was
	// given a redirect URI to start the authorization with.
	AuthURL string
	// Hint, when set, ends the message (what the user should do).
	Hint string
}

func (e *AuthorizationRequiredError) Error() string {
	what := "requires authorization"
	if e.StepUp {
		what = "requires authorization with more scopes (" + strings.Join(e.Scopes, " ") + ")"
	}
	msg := fmt.Sprintf("oauth: %s %s", e.Resource, what)
	if e.Subject != "" {
		msg += fmt.Sprintf(" for subject %q", e.Subject)
	}
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Is matches ErrAuthorizationRequired.
func (e *AuthorizationRequiredError) Is(target error) bool { return target == ErrAuthorizationRequired }

// ErrTooManyAttempts means a request was still refused after
// Config.MaxAttempts authorization attempts.
var ErrTooManyAttempts = errors.New("oauth: the server still refuses the token after the maximum number of authorization attempts")

// TransportOptions configure a Client's Transport.
type TransportOptions struct {
	// Subject is the subject of requests whose context names none.
	Subject string
	// Authorize, when set, is called when the subject must authorize; it
	// may run a login (see Client.Login) and return nil to have the
	// request retried with the new token, or an error to fail it. Calls
	// for one subject are serialised.
	Authorize func(ctx context.Context, req *AuthorizationRequiredError) error
	// RedirectURI, when set (and Authorize is not), makes the Transport
	// start an authorization for the subject and put its URL in the
	// AuthorizationRequiredError (for a backend that sends its users to it
	// and completes it with CallbackHandler).
	RedirectURI string
}

// Transport returns an http.RoundTripper that authorizes requests to the
// server through base (http.DefaultTransport when nil).
func (c *Client) Transport(base http.RoundTripper, opts TransportOptions) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &authTransport{c: c, base: base, opts: opts}
}

type authTransport struct {
	c    *Client
	base http.RoundTripper
	opts TransportOptions
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.c.sameOrigin(req.URL) {
		// A redirect or an endpoint elsewhere: tokens go only to the
		// server they were issued for.
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	subject, ok := SubjectFrom(ctx)
	if !ok {
		subject = t.opts.Subject
	}
	c := t.c
	refreshed := false
	resend := false // the request went out once: a retry clones it again
	nonceRetried := false
	for attempt := 0; ; {
		tok, err := c.Token(ctx, subject)
		if err != nil && !errors.Is(err, ErrNoToken) {
			closeBody(req)
			return nil, err
		}
		r := req
		if tok != nil || resend {
			r = req.Clone(ctx)
		}
		if resend && req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, errors.New("oauth: cannot resend the request after authorization (its body cannot be replayed)")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("oauth: resending the request: %w", err)
			}
			r.Body = body
		}
		dpop := tok != nil && tok.DPoPKey != nil
		if tok != nil {
			r.Header.Set("Authorization", tok.scheme()+" "+tok.AccessToken)
		}
		if dpop {
			// A fresh proof for every request sent, retries included.
			proof, err := jose.DPoPProof(tok.DPoPKey, r.Method, r.URL, tok.AccessToken, c.nonces.Get(r.URL), c.now())
			if err != nil {
				closeBody(r)
				return nil, err
			}
			r.Header.Set("DPoP", proof)
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		resend = true
		newNonce := dpop && c.nonces.Note(r.URL, resp.Header)
		ch, _ := AuthChallenge(resp.Header, dpop)
		if resp.StatusCode == http.StatusUnauthorized && dpop && isNonceChallenge(ch) && newNonce && !nonceRetried {
			// RFC 9449 §9: the resource asks for its nonce in the proof.
			// One retry with a new proof; the token itself was not refused.
			nonceRetried = true
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			continue
		}
		stepUp := resp.StatusCode == http.StatusForbidden && strings.EqualFold(ch.Param("error"), "insufficient_scope")
		if resp.StatusCode != http.StatusUnauthorized && !stepUp {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if attempt >= c.cfg.MaxAttempts {
			return nil, fmt.Errorf("%w (%d; HTTP %d)", ErrTooManyAttempts, c.cfg.MaxAttempts, resp.StatusCode)
		}
		attempt++
		c.noteChallenge(ch)
		if err := t.authorize(ctx, subject, tok, ch, stepUp, &refreshed); err != nil {
			return nil, err
		}
	}
}

// authorize gets a new token after a refusal: refresh, client
// credentials, the Authorize hook, or an AuthorizationRequiredError.
func (t *authTransport) authorize(ctx context.Context, subject string, failed *Token, ch Challenge, stepUp bool, refreshed *bool) error {
	c := t.c
	l := c.lockFor(subject)
	l.Lock()
	defer l.Unlock()
	// A concurrent request of the subject may already have a new token.
	if cur, _, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource}); err == nil &&
		(failed == nil || cur.AccessToken != failed.AccessToken) && !cur.expired(c.now()) {
		return nil
	}
	if failed != nil && !stepUp {
		// A refused token may mean that the resource moved to another
		// authorization server (SEP-2352): its metadata is read afresh,
		// so the client registers and logs in where it now points.
		c.forgetDiscovery()
	}
	d, err := c.discover(ctx)
	if err != nil {
		return err
	}
	var scopes []string
	switch {
	case stepUp && failed != nil:
		scopes = unionScopes(failed.Scopes, ch.Scopes())
		scopes = unionScopes(c.cfg.Scopes, scopes)
	default:
		scopes = c.selectScopes(d, ch.Scopes())
	}
	if !stepUp && failed != nil && failed.RefreshToken != "" && !*refreshed {
		*refreshed = true
		_, key, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource})
		if err == nil {
			if _, err := c.refresh(ctx, key, failed); err == nil {
				return nil
			}
		}
	}
	if failed != nil && !stepUp {
		// The server refused the token: it is of no further use.
		_ = c.store.Delete(ctx, Key{Subject: subject, Resource: c.resource})
	}
	if c.Unattended() {
		_, err := c.unattended(ctx, subject, scopes)
		return err
	}
	areq := &AuthorizationRequiredError{Subject: subject, Resource: c.resource, Scopes: slices.Clone(scopes), StepUp: stepUp}
	if t.opts.Authorize != nil {
		return t.opts.Authorize(ctx, areq)
	}
	if t.opts.RedirectURI != "" {
		u, _, err := c.StartAuthorization(ctx, AuthRequest{Subject: subject, RedirectURI: t.opts.RedirectURI, Scopes: scopes})
		if err != nil {
			return err
		}
		areq.AuthURL = u
	}
	return areq
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// IsAuthorizationError reports an authorization failure of one request:
// authorization required, too many attempts, or an error the
// authorization server answered. It concerns the request's subject only:
// the connection to the server is fine.
func IsAuthorizationError(err error) bool {
	var ae *AuthorizationError
	return errors.Is(err, ErrAuthorizationRequired) || errors.Is(err, ErrTooManyAttempts) || errors.As(err, &ae)
}
