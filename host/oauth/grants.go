package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
)

// Token returns a usable token of the subject: the stored one, renewed by
// refresh (or, for the client credentials grant, a new one) when it is
// expired. ErrNoToken when the subject has none and one needs a login.
func (c *Client) Token(ctx context.Context, subject string) (*Token, error) {
	tok, _, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource})
	if err == nil && !tok.expired(c.now()) {
		return tok, nil
	}
	if err != nil && !errors.Is(err, ErrNoToken) {
		return nil, fmt.Errorf("oauth: reading the token store: %w", err)
	}
	if err != nil && !c.Unattended() {
		return nil, ErrNoToken
	}
	l := c.lockFor(subject)
	l.Lock()
	defer l.Unlock()
	// Another request may have renewed it meanwhile.
	tok, key, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource})
	if err == nil && !tok.expired(c.now()) {
		return tok, nil
	}
	if err == nil && tok.RefreshToken != "" {
		nt, rerr := c.refresh(ctx, key, tok)
		if rerr == nil {
			return nt, nil
		}
		if !c.Unattended() {
			return nil, rerr
		}
	}
	if c.Unattended() {
		var scopes []string
		if tok != nil {
			scopes = tok.Scopes
		}
		return c.unattended(ctx, subject, scopes)
	}
	return nil, ErrNoToken
}

// Unattended reports whether the Client's grant gets tokens without a
// person's login (client_credentials, id-jag, jwt-bearer).
func (c *Client) Unattended() bool {
	return c.cfg.Grant == GrantClientCredentials || c.cfg.Grant == GrantIDJAG || c.cfg.Grant == GrantJWTBearer
}

// unattended gets a new token with the Client's unattended grant (the
// scopes asked for, else those of the server's last challenge) and stores
// it.
func (c *Client) unattended(ctx context.Context, subject string, scopes []string) (*Token, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	if scopes == nil {
		scopes = c.challengeScopes(d)
	}
	var tok *Token
	switch c.cfg.Grant {
	case GrantIDJAG:
		tok, err = c.idJAG(ctx, d, scopes)
	case GrantJWTBearer:
		tok, err = c.jwtBearer(ctx, subject, d, scopes)
	default:
		tok, err = c.clientCredentials(ctx, d, scopes)
	}
	if err != nil {
		return nil, err
	}
	if err := c.keepToken(ctx, subject, d.issuer, tok, scopes); err != nil {
		return nil, err
	}
	return tok, nil
}

// keepToken stores a new token of the subject issued by issuer; without
// scopes in the answer it is taken to have those requested.
func (c *Client) keepToken(ctx context.Context, subject, issuer string, tok *Token, requested []string) error {
	if len(tok.Scopes) == 0 {
		tok.Scopes = slices.Clone(requested)
	}
	if err := c.store.Put(ctx, Key{Subject: subject, Resource: c.resource, Issuer: issuer}, tok); err != nil {
		return fmt.Errorf("oauth: storing the token: %w", err)
	}
	return nil
}

// refresh renews tok with its refresh token and stores the result. A
// rotated refresh token replaces the old one; without one in the answer
// the old one is kept. An invalid_grant answer deletes the stored token
// (the subject must log in again).
func (c *Client) refresh(ctx context.Context, key Key, tok *Token) (*Token, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	if !sameIssuer(key.Issuer, d.issuer) {
		// The resource now names another authorization server. The
		// refresh token, and the client it was issued to (a registration's
		// secret), belong to the issuer that issued them and are sent
		// nowhere else: the token is dropped and the subject logs in again
		// at the new one.
		_ = c.store.Delete(ctx, key)
		return nil, fmt.Errorf("%w (the server's authorization server is now %s, not %s, which issued the token: log in again)",
			ErrNoToken, d.issuer, key.Issuer)
	}
	reg := clientReg{id: tok.ClientID, secret: tok.ClientSecret, method: tok.AuthMethod}
	if reg.id == "" {
		reg = clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "resource": {d.resource}}
	// A DPoP-bound refresh token is renewed with its own key (RFC 9449
	// §5.0); a bearer one stays bearer.
	nt, err := c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, tok.DPoPKey)
	if err != nil {
		var ae *AuthorizationError
		if errors.As(err, &ae) && ae.Code == "invalid_grant" {
			// Another process sharing the store may have used (and
			// rotated) this refresh token first: take its result.
			if cur, _, gerr := c.store.Get(ctx, key); gerr == nil && cur.RefreshToken != tok.RefreshToken && !cur.expired(c.now()) {
				return cur, nil
			}
			_ = c.store.Delete(ctx, key)
			return nil, fmt.Errorf("%w (the refresh token was refused)", ErrNoToken)
		}
		return nil, err
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = tok.RefreshToken
	}
	if len(nt.Scopes) == 0 {
		nt.Scopes = slices.Clone(tok.Scopes)
	}
	if err := c.store.Put(ctx, Key{Subject: key.Subject, Resource: c.resource, Issuer: key.Issuer}, nt); err != nil {
		return nil, fmt.Errorf("oauth: storing the token: %w", err)
	}
	return nt, nil
}

// clientCredentials gets a token with the client credentials grant.
func (c *Client) clientCredentials(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	reg := clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {d.resource}}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	key, err := c.grantKey(d)
	if err != nil {
		return nil, err
	}
	return c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, key)
}
