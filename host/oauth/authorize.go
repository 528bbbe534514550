package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
	"github.com/agenthost/agenthost/host/oauth/internal/tokenwire"
	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
)

// AuthRequest starts an authorization code flow.
type AuthRequest struct {
	// Subject is the end user or tenant the token will act for.
	Subject string
	// RedirectURI receives the authorization response.
	RedirectURI string
	// Scopes to request; when nil they are selected from the server's last
	// challenge (see Config.Scopes).
	Scopes []string
}

// StartAuthorization prepares an authorization request and returns the URL
// to send the end user's browser to, and the request's state. The request
// is completed by CompleteAuthorization with the redirect's query.
func (c *Client) StartAuthorization(ctx context.Context, r AuthRequest) (authURL, state string, err error) {
	if c.cfg.Grant != GrantAuthorizationCode {
		return "", "", fmt.Errorf("oauth: the %s grant has no authorization step", c.cfg.Grant)
	}
	if err := wellknown.CheckURL("redirect URI", r.RedirectURI, true); err != nil {
		return "", "", err
	}
	d, err := c.discover(ctx)
	if err != nil {
		return "", "", err
	}
	if d.as.AuthorizationEndpoint == "" {
		return "", "", fmt.Errorf("oauth: the authorization server %s has no authorization_endpoint", d.issuer)
	}
	if !d.as.supportsPKCE() {
		return "", "", fmt.Errorf("oauth: the authorization server %s does not advertise PKCE S256 (code_challenge_methods_supported); refusing to authorize without it", d.issuer)
	}
	reg, err := c.identity(ctx, d, r.RedirectURI)
	if err != nil {
		return "", "", err
	}
	key, err := c.grantKey(d)
	if err != nil {
		return "", "", err
	}
	scopes := r.Scopes
	if scopes == nil {
		scopes = c.challengeScopes(d)
	}
	verifier := jose.RandomString(32)
	state = jose.RandomString(32)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {reg.id},
		"redirect_uri":          {r.RedirectURI},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {d.resource},
	}
	if len(scopes) > 0 {
		q.Set("scope", scopeString(scopes))
	}
	u, err := url.Parse(d.as.AuthorizationEndpoint)
	if err != nil {
		return "", "", fmt.Errorf("oauth: authorization_endpoint: %w", err)
	}
	orig := u.Query()
	for k, v := range q {
		orig[k] = v
	}
	u.RawQuery = orig.Encode()
	p := &pending{subject: r.Subject, verifier: verifier, redirectURI: r.RedirectURI, issuer: d.issuer,
		issRequired: d.as.AuthorizationResponseIssParamSupported, resource: d.resource, scopes: scopes,
		reg: reg, tokenEndpoint: d.as.TokenEndpoint, dpopKey: key, created: c.now()}
	if err := c.addPending(state, p); err != nil {
		return "", "", err
	}
	return u.String(), state, nil
}

func (c *Client) addPending(state string, p *pending) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxPending {
		now := c.now()
		for s, q := range c.pending {
			if now.Sub(q.created) > pendingTTL {
				delete(c.pending, s)
			}
		}
		if len(c.pending) >= maxPending {
			return errors.New("oauth: too many authorizations in progress")
		}
	}
	c.pending[state] = p
	return nil
}

func (c *Client) takePending(state string) (*pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[state]
	if !ok {
		return nil, false
	}
	delete(c.pending, state)
	if c.now().Sub(p.created) > pendingTTL {
		return nil, false
	}
	return p, true
}

// ErrInvalidState means the authorization response's state matches no
// authorization in progress (unknown, used or expired): possibly forged.
var ErrInvalidState = errors.New("oauth: the authorization response's state matches no authorization in progress")

// AuthorizationError is an error the authorization server reported in its
// redirect or token endpoint answer. Description is the server's text,
// cut short.
type AuthorizationError struct {
	Code        string
	Description string
	Status      int // HTTP status of a token endpoint answer; 0 for a redirect
}

func (e *AuthorizationError) Error() string {
	msg := "oauth: the authorization server answered " + e.Code
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// CompleteAuthorization finishes the authorization started with the state
// in query: it checks the iss parameter (RFC 9207), exchanges the code
// (with the PKCE verifier and the resource) and stores the token under
// the subject of the request. It returns that subject.
func (c *Client) CompleteAuthorization(ctx context.Context, query url.Values) (subject string, err error) {
	p, ok := c.takePending(query.Get("state"))
	if !ok {
		return "", ErrInvalidState
	}
	if code := query.Get("error"); code != "" {
		return p.subject, &AuthorizationError{Code: tokenwire.Clip(code, 64), Description: tokenwire.Clip(query.Get("error_description"), 200)}
	}
	iss := query.Get("iss")
	if iss != "" && !sameIssuer(iss, p.issuer) {
		return p.subject, fmt.Errorf("oauth: the authorization response comes from issuer %s, not %s (RFC 9207)", tokenwire.Clip(iss, 200), p.issuer)
	}
	if iss == "" && p.issRequired {
		return p.subject, fmt.Errorf("oauth: the authorization response has no iss parameter, which %s promises (RFC 9207)", p.issuer)
	}
	code := query.Get("code")
	if code == "" {
		return p.subject, errors.New("oauth: the authorization response has no code")
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {p.redirectURI},
		"code_verifier": {p.verifier},
		"resource":      {p.resource},
	}
	tok, err := c.tokenRequest(ctx, p.tokenEndpoint, p.issuer, p.reg, form, p.dpopKey)
	if err != nil {
		return p.subject, err
	}
	return p.subject, c.keepToken(ctx, p.subject, p.issuer, tok, p.scopes)
}

// HasPending reports whether state names an authorization in progress.
func (c *Client) HasPending(state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[state]
	return ok
}
