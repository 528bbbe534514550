package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Workload identity federation (SEP-1933): the workload's platform issues
// it an assertion (a JWT whose audience is the authorization server), which
// the client presents with the JWT bearer grant (RFC 7523 §2.1). A refusal
// is final for the request: the grant is not retried and no other grant is
// tried in its place.

// ErrNoAssertion means the assertion source of the jwt-bearer grant gave
// none.
var ErrNoAssertion = errors.New("oauth: the jwt-bearer grant has no assertion")

// maxAssertionBytes bounds an assertion (a compact JWT).
const maxAssertionBytes = 64 << 10

// jwtBearer gets a token with the jwt-bearer grant. The assertion never
// appears in an error.
func (c *Client) jwtBearer(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
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
	if err != nil {
		return nil, fmt.Errorf("oauth: the jwt-bearer grant: %w", err)
	}
	// The assertion is the workload's credential: a token is renewed with
	// a new one, never with a refresh token of this grant.
	tok.RefreshToken = ""
	return tok, nil
}
