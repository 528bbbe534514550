package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
)

// noteChallenge remembers the server's last Bearer challenge (its scope
// and resource_metadata drive the next authorization).
func (c *Client) noteChallenge(ch Challenge) {
	c.mu.Lock()
	c.challenge = ch
	c.mu.Unlock()
}

// discover finds the protected resource metadata and the authorization
// server metadata, once; again when a challenge names other metadata.
func (c *Client) discover(ctx context.Context) (*discovery, error) {
	c.mu.Lock()
	d, ch := c.disc, c.challenge
	c.mu.Unlock()
	rmURL := ch.Param("resource_metadata")
	if d != nil && (rmURL == "" || rmURL == d.prmURL) {
		return d, nil
	}
	d, err := c.fetchDiscovery(ctx, rmURL)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.disc = d
	c.mu.Unlock()
	return d, nil
}

// forgetDiscovery drops the discovered metadata: the next discover reads
// it again.
func (c *Client) forgetDiscovery() {
	c.mu.Lock()
	c.disc = nil
	c.mu.Unlock()
}

func (c *Client) fetchDiscovery(ctx context.Context, rmURL string) (*discovery, error) {
	candidates, err := wellknown.ResourceMetadataURLs(c.cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	if rmURL != "" {
		if err := wellknown.CheckURL("resource_metadata", rmURL, false); err != nil {
			return nil, err
		}
		candidates = append([]string{rmURL}, candidates...)
	}
	for _, u := range candidates {
		body, err := wellknown.Fetch(ctx, c.hc, u)
		if errors.Is(err, ErrMetadataNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		prm, err := ParseResourceMetadata(body)
		if err != nil {
			return nil, err
		}
		if !wellknown.ResourceCovers(prm.Resource, c.cfg.ServerURL) {
			return nil, fmt.Errorf("oauth: the protected resource metadata at %s names resource %s, not %s", u, prm.Resource, c.resource)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("oauth: the protected resource metadata at %s names no authorization server", u)
		}
		issuer := prm.AuthorizationServers[0]
		as, err := c.serverMetadata(ctx, issuer)
		if err != nil {
			return nil, err
		}
		return &discovery{prmURL: u, prm: prm, as: as, issuer: as.Issuer, resource: prm.Resource}, nil
	}
	return c.legacyDiscovery(ctx)
}

// serverMetadata fetches an issuer's metadata from the well-known URIs and
// checks that it names the same issuer (RFC 8414 §3.3).
func (c *Client) serverMetadata(ctx context.Context, issuer string) (*ServerMetadata, error) {
	urls, err := wellknown.ServerMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	for _, u := range urls {
		body, err := wellknown.Fetch(ctx, c.hc, u)
		if errors.Is(err, ErrMetadataNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := ParseServerMetadata(body)
		if err != nil {
			return nil, err
		}
		if !sameIssuer(m.Issuer, issuer) {
			return nil, fmt.Errorf("oauth: the metadata at %s names issuer %s, not %s", u, m.Issuer, issuer)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: no authorization server metadata for %s", ErrMetadataNotFound, issuer)
}

// legacyDiscovery is the 2025-03-26 fallback for servers without protected
// resource metadata: the authorization server is the server's origin, its
// metadata at the origin's well-known URI, else the default endpoints
// /authorize, /token and /register.
func (c *Client) legacyDiscovery(ctx context.Context) (*discovery, error) {
	u, _ := url.Parse(c.cfg.ServerURL)
	origin := u.Scheme + "://" + u.Host
	body, err := wellknown.Fetch(ctx, c.hc, origin+"/.well-known/oauth-authorization-server")
	var as *ServerMetadata
	switch {
	case err == nil:
		if as, err = ParseServerMetadata(body); err != nil {
			return nil, err
		}
	case errors.Is(err, ErrMetadataNotFound):
		if u.Scheme != "https" && !wellknown.IsLoopback(u.Hostname()) {
			return nil, fmt.Errorf("oauth: %s has no authorization metadata and is not https", origin)
		}
		as = &ServerMetadata{Issuer: origin, AuthorizationEndpoint: origin + "/authorize",
			TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}}
	default:
		return nil, err
	}
	return &discovery{as: as, issuer: as.Issuer, resource: c.resource}, nil
}

// challengeScopes are the scopes to request when the caller names none:
// those selectScopes derives from the last challenge the server sent.
func (c *Client) challengeScopes(d *discovery) []string {
	c.mu.Lock()
	ch := c.challenge
	c.mu.Unlock()
	return c.selectScopes(d, ch.Scopes())
}

// selectScopes picks the scopes to request: the configured ones plus the
// challenge's; without configured ones, the challenge's, else the
// resource's scopes_supported, else none.
func (c *Client) selectScopes(d *discovery, challenge []string) []string {
	if len(c.cfg.Scopes) > 0 {
		return unionScopes(c.cfg.Scopes, challenge)
	}
	if len(challenge) > 0 {
		return slices.Clone(challenge)
	}
	if d.prm != nil {
		return slices.Clone(d.prm.ScopesSupported)
	}
	return nil
}

// Probe sends the server an unauthenticated MCP initialize request and
// remembers the Bearer (or DPoP) challenge of a 401 or 403 answer (its
// resource_metadata and scope guide discovery). It reports whether the
// server asked for authorization.
func (c *Client) Probe(ctx context.Context) (bool, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + wellknown.ProtocolVersion +
		`","capabilities":{},"clientInfo":{"name":"` + c.cfg.ClientName + `","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.ServerURL, strings.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("oauth: probe: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(wellknown.ProtocolVersionHeader, wellknown.ProtocolVersion)
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("oauth: probing %s: %w", c.resource, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return false, nil
	}
	if ch, ok := AuthChallenge(resp.Header, false); ok {
		c.noteChallenge(ch)
	}
	return true, nil
}
