package oauth

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
	"github.com/agenthost/agenthost/host/oauth/internal/tokenwire"
)

// tokenRequest posts to the token endpoint with the client's
// authentication and reads the token. With a DPoP key the request carries
// a proof (RFC 9449 §5), retried once with the server's nonce on a
// use_dpop_nonce answer, and the token issued is bound to the key.
func (c *Client) tokenRequest(ctx context.Context, endpoint, issuer string, reg clientReg, form url.Values, key *ecdsa.PrivateKey) (*Token, error) {
	header := http.Header{}
	var basic string
	switch reg.method {
	case AuthClientSecretBasic:
		basic = tokenwire.BasicCredentials(reg.id, reg.secret)
		header.Set("Authorization", "Basic "+basic)
	case AuthClientSecretPost:
		form.Set("client_id", reg.id)
		form.Set("client_secret", reg.secret)
	case AuthPrivateKeyJWT:
		if c.cfg.PrivateKey == nil {
			return nil, errors.New("oauth: private_key_jwt needs a private key")
		}
		a, err := jose.ClientAssertion(c.cfg.PrivateKey, reg.id, issuer, c.now())
		if err != nil {
			return nil, err
		}
		form.Set("client_id", reg.id)
		form.Set("client_assertion_type", jose.ClientAssertionType)
		form.Set("client_assertion", a)
	default:
		if reg.id != "" {
			form.Set("client_id", reg.id)
		}
	}
	// What the answer must not repeat in an error: the grant's secrets
	// (refresh token, code, verifier, assertions) and the client's.
	sent := tokenwire.SentSecrets(form, reg.secret, basic)
	eu, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("oauth: token endpoint: %w", err)
	}
	var resp *http.Response
	var data []byte
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, fmt.Errorf("oauth: token request: %w", err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		if key != nil {
			proof, err := jose.DPoPProof(key, http.MethodPost, eu, "", c.nonces.Get(eu), c.now())
			if err != nil {
				return nil, err
			}
			req.Header.Set("DPoP", proof)
			sent = append(sent, proof)
		}
		resp, err = c.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("oauth: token request to %s: %w", endpoint, err)
		}
		data, err = io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("oauth: reading the token endpoint's answer: %w", err)
		}
		newNonce := key != nil && c.nonces.Note(eu, resp.Header)
		// RFC 9449 §8: a use_dpop_nonce answer names the nonce the next
		// proof must carry; one retry with a fresh proof.
		if resp.StatusCode == http.StatusBadRequest && newNonce && try == 0 && tokenwire.ErrorCode(data) == "use_dpop_nonce" {
			continue
		}
		break
	}
	if resp.StatusCode != http.StatusOK {
		return nil, parseErrorBody(resp.StatusCode, data, sent)
	}
	var out struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		RefreshToken string          `json:"refresh_token"`
		Scope        string          `json:"scope"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errors.New("oauth: the token endpoint's answer is not valid JSON")
	}
	if out.AccessToken == "" {
		return nil, errors.New("oauth: the token endpoint's answer has no access_token")
	}
	tok := &Token{AccessToken: out.AccessToken, RefreshToken: out.RefreshToken, Scopes: strings.Fields(out.Scope),
		ClientID: reg.id, ClientSecret: reg.secret, AuthMethod: reg.method}
	switch {
	case strings.EqualFold(out.TokenType, tokenTypeDPoP) && key != nil:
		tok.DPoPKey = key
	case strings.EqualFold(out.TokenType, tokenTypeBearer) && key != nil && c.cfg.DPoP == DPoPRequired:
		return nil, fmt.Errorf("%w (it issued a Bearer token in answer to a DPoP proof)", ErrDPoPUnsupported)
	case strings.EqualFold(out.TokenType, tokenTypeBearer):
		// A server may issue a bearer token despite the proof (RFC 9449
		// §5): the key is then of no use.
	default:
		return nil, fmt.Errorf("oauth: the token endpoint issued a token of type %q, not %s", tokenwire.Clip(tokenwire.Redact(out.TokenType, sent), 32), expectedType(key))
	}
	if secs, ok := tokenwire.ExpiresIn(out.ExpiresIn); ok {
		tok.Expiry = c.now().Add(time.Duration(secs) * time.Second)
	}
	return tok, nil
}

// expectedType names the token types a token request accepts.
func expectedType(key *ecdsa.PrivateKey) string {
	if key != nil {
		return "DPoP or Bearer"
	}
	return "Bearer"
}

// parseErrorBody turns an error answer into an *AuthorizationError. Any of
// sent (the secrets of the request answered, see tokenwire.SentSecrets) that the
// server quotes is redacted.
func parseErrorBody(status int, data []byte, sent []string) error {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error == "" {
		return &AuthorizationError{Code: "server_error", Description: "no OAuth error in the answer", Status: status}
	}
	return &AuthorizationError{Code: tokenwire.Clip(tokenwire.Redact(e.Error, sent), 64), Description: tokenwire.Clip(tokenwire.Redact(e.Description, sent), 200), Status: status}
}
