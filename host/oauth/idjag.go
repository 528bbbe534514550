package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/tokenwire"
)

// Enterprise-managed authorization (SEP-990, the Identity Assertion JWT
// Authorization Grant): the client exchanges the person's ID token at the
// enterprise identity provider for an ID-JAG (RFC 8693 token exchange),
// then presents the ID-JAG to the MCP server's authorization server with
// the JWT bearer grant (RFC 7523). No browser is involved.
const (
	grantTypeTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantTypeJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenTypeIDJAG         = "urn:ietf:params:oauth:token-type:id-jag"
	tokenTypeIDToken       = "urn:ietf:params:oauth:token-type:id_token"
)

// ErrNoIDToken means the ID token source of the id-jag grant gave none.
var ErrNoIDToken = errors.New("oauth: the id-jag grant has no ID token")

// idJAG gets a token with the id-jag grant: a token exchange at the
// identity provider for an ID-JAG naming the authorization server and the
// resource, then the JWT bearer grant at the authorization server. The ID
// token and the ID-JAG never appear in an error.
func (c *Client) idJAG(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	idToken, err := c.cfg.IDToken(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth: reading the ID token: %w", err)
	}
	if idToken == "" {
		return nil, ErrNoIDToken
	}
	jag, err := c.exchangeIDJAG(ctx, d, idToken, scopes)
	if err != nil {
		return nil, err
	}
	reg := clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	form := url.Values{"grant_type": {grantTypeJWTBearer}, "assertion": {jag}, "resource": {d.resource}}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	key, err := c.grantKey(d)
	if err != nil {
		return nil, err
	}
	tok, err := c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, key)
	if err != nil {
		return nil, fmt.Errorf("oauth: the JWT bearer grant with the ID-JAG: %w", err)
	}
	// An ID-JAG is single-use and short-lived: renewing means a new
	// exchange, never a refresh token of this grant.
	tok.RefreshToken = ""
	return tok, nil
}

// exchangeIDJAG asks the identity provider for an ID-JAG whose audience is
// the authorization server and whose resource is the MCP server.
func (c *Client) exchangeIDJAG(ctx context.Context, d *discovery, idToken string, scopes []string) (string, error) {
	form := url.Values{
		"grant_type":           {grantTypeTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"subject_token":        {idToken},
		"subject_token_type":   {tokenTypeIDToken},
		"audience":             {d.issuer},
		"resource":             {d.resource},
	}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	if c.cfg.IDPClientSecret == "" {
		form.Set("client_id", c.cfg.IDPClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.IDPTokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("oauth: token exchange request: %w", err)
	}
	var basic string
	if c.cfg.IDPClientSecret != "" {
		basic = tokenwire.BasicCredentials(c.cfg.IDPClientID, c.cfg.IDPClientSecret)
		req.Header.Set("Authorization", "Basic "+basic)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("oauth: token exchange at the identity provider %s: %w", c.cfg.IDPTokenEndpoint, redactURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return "", fmt.Errorf("oauth: reading the identity provider's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("oauth: token exchange at the identity provider: %w", parseErrorBody(resp.StatusCode, data, tokenwire.SentSecrets(form, c.cfg.IDPClientSecret, basic)))
	}
	return parseIDJAGAnswer(data)
}

// redactURLError drops the URL of a *url.Error (it is the endpoint, which
// the caller names already; the form body is never part of it).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// parseIDJAGAnswer reads the identity provider's token exchange answer
// (RFC 8693 §2.2.1): the ID-JAG is its access_token, and issued_token_type
// must say it is one. The token itself never appears in an error.
func parseIDJAGAnswer(data []byte) (string, error) {
	var out struct {
		AccessToken     string `json:"access_token"`
		IssuedTokenType string `json:"issued_token_type"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", errors.New("oauth: the identity provider's token exchange answer is not valid JSON")
	}
	if out.AccessToken == "" {
		return "", errors.New("oauth: the identity provider's token exchange answer has no access_token")
	}
	if out.IssuedTokenType != tokenTypeIDJAG {
		return "", fmt.Errorf("oauth: the identity provider issued a token of type %q, not an ID-JAG (%s)", tokenwire.Clip(out.IssuedTokenType, 80), tokenTypeIDJAG)
	}
	if strings.Count(out.AccessToken, ".") != 2 || strings.ContainsAny(out.AccessToken, " \t\r\n") {
		return "", errors.New("oauth: the identity provider's ID-JAG is not a compact JWT")
	}
	return out.AccessToken, nil
}
