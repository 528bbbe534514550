package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"

	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
)

// authMethod chooses the token endpoint authentication method.
func (c *Client) authMethod(as *ServerMetadata, secret, registered string) string {
	if c.cfg.TokenEndpointAuthMethod != "" {
		return c.cfg.TokenEndpointAuthMethod
	}
	if registered != "" {
		return registered
	}
	supported := as.TokenEndpointAuthMethodsSupported
	ok := func(m string) bool { return len(supported) == 0 || slices.Contains(supported, m) }
	if c.cfg.PrivateKey != nil && slices.Contains(supported, AuthPrivateKeyJWT) {
		return AuthPrivateKeyJWT
	}
	if secret != "" {
		if ok(AuthClientSecretBasic) {
			return AuthClientSecretBasic
		}
		if slices.Contains(supported, AuthClientSecretPost) {
			return AuthClientSecretPost
		}
		return AuthClientSecretBasic
	}
	if c.cfg.PrivateKey != nil {
		return AuthPrivateKeyJWT
	}
	return AuthNone
}

// ErrNoClient means no client identity could be found: no pre-registered
// client, no usable metadata document and no registration endpoint.
var ErrNoClient = errors.New("oauth: no client id")

// identity finds the client to authorize as.
func (c *Client) identity(ctx context.Context, d *discovery, redirectURI string) (clientReg, error) {
	if c.cfg.ClientID != "" {
		return clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}, nil
	}
	if c.cfg.ClientMetadataURL != "" && d.as.ClientIDMetadataDocumentSupported {
		return clientReg{id: c.cfg.ClientMetadataURL, method: c.authMethod(d.as, "", AuthNone)}, nil
	}
	if d.as.RegistrationEndpoint == "" {
		return clientReg{}, fmt.Errorf("%w: the authorization server %s offers no client registration; configure a client id", ErrNoClient, d.issuer)
	}
	c.mu.Lock()
	reg, ok := c.reg[d.issuer+" "+redirectURI]
	c.mu.Unlock()
	if ok {
		return reg, nil
	}
	reg, err := c.register(ctx, d, redirectURI)
	if err != nil {
		return clientReg{}, err
	}
	c.mu.Lock()
	if len(c.reg) >= maxRegistered {
		clear(c.reg)
	}
	c.reg[d.issuer+" "+redirectURI] = reg
	c.mu.Unlock()
	return reg, nil
}

// register performs dynamic client registration (RFC 7591).
func (c *Client) register(ctx context.Context, d *discovery, redirectURI string) (clientReg, error) {
	method := AuthNone
	if s := d.as.TokenEndpointAuthMethodsSupported; len(s) > 0 && !slices.Contains(s, AuthNone) {
		method = s[0]
		for _, m := range []string{AuthClientSecretBasic, AuthClientSecretPost} {
			if slices.Contains(s, m) {
				method = m
				break
			}
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                c.cfg.ClientName,
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           applicationType(redirectURI),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.as.RegistrationEndpoint, bytes.NewReader(body))
	if err != nil {
		return clientReg{}, fmt.Errorf("oauth: registration request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return clientReg{}, fmt.Errorf("oauth: client registration: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return clientReg{}, fmt.Errorf("oauth: client registration: %w", err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return clientReg{}, fmt.Errorf("oauth: client registration at %s: %w", d.as.RegistrationEndpoint, parseErrorBody(resp.StatusCode, data, nil))
	}
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.ClientID == "" {
		return clientReg{}, fmt.Errorf("oauth: client registration at %s answered without a client_id", d.as.RegistrationEndpoint)
	}
	reg := clientReg{id: out.ClientID, secret: out.ClientSecret}
	reg.method = c.authMethod(d.as, out.ClientSecret, out.AuthMethod)
	if out.AuthMethod == "" && out.ClientSecret == "" {
		reg.method = c.authMethod(d.as, "", AuthNone)
	}
	return reg, nil
}

// applicationType is the application_type a registration declares (SEP-837,
// OpenID Connect Dynamic Client Registration §2): "native" for a client
// whose redirect URI is on a loopback host (the CLI's local listener) or
// uses a private-use scheme, "web" for one redirected to a remote host
// (agenthost serve behind its public URL). Authorization servers that
// follow OpenID Connect default to "web" and refuse a loopback redirect
// URI for it, so the field is always sent.
func applicationType(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return "web"
	}
	if (u.Scheme != "http" && u.Scheme != "https") || wellknown.IsLoopback(u.Hostname()) {
		return "native"
	}
	return "web"
}
