package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Workload identity federation (SEP-1933): the workload's platform issues
// it an assertion (a JWT whose audience is the authorization server), which
// the client presents with the JWT bearer grant (RFC 7523 §2.1). A refusal
// is final: the grant is not retried and no other grant is tried in its
// place. The Client remembers the assertion refused for each subject (its
// hash) and the refusal (a 4xx answer): until the source gives another
// assertion, a token is refused at once with that error, nothing sent.

// ErrNoAssertion means the assertion source of the jwt-bearer grant gave
// none.
var ErrNoAssertion = errors.New("oauth: the jwt-bearer grant has no assertion")

// maxAssertionBytes bounds an assertion (a compact JWT).
const maxAssertionBytes = 64 << 10

// maxRefused bounds the subjects whose refused assertion a Client
// remembers.
const maxRefused = 1024

// refusal is an assertion the authorization server refused, by its hash.
type refusal struct {
	sum [32]byte
	err error
}

// refused returns the authorization server's refusal of this very
// assertion for the subject, if it refused it before.
func (c *Client) refused(subject string, sum [32]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.refusals[subject]; ok && r.sum == sum {
		return r.err
	}
	return nil
}

// noteRefusal remembers that the authorization server refused the
// subject's assertion with err.
func (c *Client) noteRefusal(subject string, sum [32]byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals == nil || len(c.refusals) >= maxRefused {
		c.refusals = map[string]refusal{}
	}
	c.refusals[subject] = refusal{sum: sum, err: err}
}

// jwtBearer gets a token with the jwt-bearer grant. The assertion never
// appears in an error.
func (c *Client) jwtBearer(ctx context.Context, subject string, d *discovery, scopes []string) (*Token, error) {
	assertion, err := c.cfg.Assertion(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the assertion: %w", err)
	}
	assertion = strings.TrimSpace(assertion)
	if assertion == "" {
		return nil, ErrNoAssertion
	}
	if len(assertion) > maxAssertionBytes || strings.Count(assertion, ".") != 2 || strings.ContainsAny(assertion, " \t\r\n") {
		return nil, errors.New("oauth: the jwt-bearer assertion is not a compact JWT")
	}
	sum := sha256.Sum256([]byte(assertion))
	if err := c.refused(subject, sum); err != nil {
		return nil, fmt.Errorf("oauth: the jwt-bearer grant (this assertion was refused before; not sent again): %w", err)
	}
	key, err := c.grantKey(d)
	if err != nil {
		return nil, err
	}
	reg := clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	form := url.Values{"grant_type": {grantTypeJWTBearer}, "assertion": {assertion}, "resource": {d.resource}}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	tok, err := c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, key)
	// A 4xx answer judged the assertion (or the client); a 5xx is the
	// server's own trouble.
	if ae := (*AuthorizationError)(nil); errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
		c.noteRefusal(subject, sum, ae)
	}
	if err != nil {
		return nil, fmt.Errorf("oauth: the jwt-bearer grant: %w", err)
	}
	// The assertion is the workload's credential: a token is renewed with
	// a new one, never with a refresh token of this grant.
	tok.RefreshToken = ""
	return tok, nil
}
