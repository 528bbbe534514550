package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/httpredirect"
)

// ResourceMetadata is OAuth 2.0 Protected Resource Metadata (RFC 9728).
type ResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	// DPoPBoundAccessTokensRequired says the resource accepts DPoP-bound
	// tokens only (RFC 9728 §2).
	DPoPBoundAccessTokensRequired bool `json:"dpop_bound_access_tokens_required"`
}

// ServerMetadata is OAuth 2.0 Authorization Server Metadata (RFC 8414) or
// an OpenID Provider configuration: the fields this package uses.
type ServerMetadata struct {
	Issuer                                 string   `json:"issuer"`
	AuthorizationEndpoint                  string   `json:"authorization_endpoint"`
	TokenEndpoint                          string   `json:"token_endpoint"`
	RegistrationEndpoint                   string   `json:"registration_endpoint"`
	ScopesSupported                        []string `json:"scopes_supported"`
	ResponseTypesSupported                 []string `json:"response_types_supported"`
	GrantTypesSupported                    []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported      []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported          []string `json:"code_challenge_methods_supported"`
	ClientIDMetadataDocumentSupported      bool     `json:"client_id_metadata_document_supported"`
	AuthorizationResponseIssParamSupported bool     `json:"authorization_response_iss_parameter_supported"`
	// DPoPSigningAlgValuesSupported are the DPoP proof algorithms the
	// server accepts (RFC 9449 §5.1).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported"`
}

// maxMetadataBytes bounds a metadata document or token endpoint answer.
const maxMetadataBytes = 1 << 20

// ErrMetadataNotFound means no metadata document was found at any of the
// well-known locations tried.
var ErrMetadataNotFound = errors.New("oauth: metadata not found")

// ParseResourceMetadata decodes and checks a protected resource metadata
// document: resource must be an http(s) URL, every authorization server an
// acceptable issuer URL.
func ParseResourceMetadata(data []byte) (*ResourceMetadata, error) {
	var m ResourceMetadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("oauth: protected resource metadata is not valid JSON: %w", err)
	}
	if m.Resource == "" {
		return nil, errors.New("oauth: protected resource metadata has no resource")
	}
	if err := checkURL("resource", m.Resource, false); err != nil {
		return nil, err
	}
	for _, as := range m.AuthorizationServers {
		if err := checkURL("authorization_servers", as, true); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// ParseServerMetadata decodes and checks an authorization server metadata
// document. The endpoints it names must be https URLs (http only on a
// loopback host); the issuer must be present.
func ParseServerMetadata(data []byte) (*ServerMetadata, error) {
	var m ServerMetadata
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("oauth: authorization server metadata is not valid JSON: %w", err)
	}
	if m.Issuer == "" {
		return nil, errors.New("oauth: authorization server metadata has no issuer")
	}
	if err := checkURL("issuer", m.Issuer, true); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
	} {
		if f.v == "" {
			continue
		}
		if err := checkURL(f.name, f.v, true); err != nil {
			return nil, err
		}
	}
	if m.TokenEndpoint == "" {
		return nil, errors.New("oauth: authorization server metadata has no token_endpoint")
	}
	return &m, nil
}

// supportsPKCE reports whether the server advertises S256.
func (m *ServerMetadata) supportsPKCE() bool {
	return slices.Contains(m.CodeChallengeMethodsSupported, "S256")
}

// checkURL accepts absolute http(s) URLs without a fragment; with secure
// set, plain http only for a loopback host.
func checkURL(field, raw string, secure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("oauth: %s is not an absolute http(s) URL", field)
	}
	if u.Fragment != "" {
		return fmt.Errorf("oauth: %s has a fragment", field)
	}
	if secure && u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("oauth: %s must use https (http only on a loopback host)", field)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// resourceMetadataURLs lists where a server's protected resource metadata
// may be, in the order the spec gives: path-based first, then the root.
func resourceMetadataURLs(server string) ([]string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth: server URL %q is not absolute", server)
	}
	root := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource"
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{root}, nil
	}
	return []string{root + path, root}, nil
}

// serverMetadataURLs lists where an issuer's metadata may be (MCP
// authorization spec, "Authorization Server Metadata Discovery").
func serverMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth: issuer %q is not absolute", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}, nil
}

// sameIssuer compares issuer identifiers by simple string comparison, the
// one rule for the metadata's issuer (RFC 8414 §3.3: identical to the
// identifier the well-known URL was built from), the authorization
// response's iss (RFC 9207 §2.4) and the issuer a stored token belongs to.
// No URL normalisation: a trailing slash, a case-folded scheme or host, an
// elided default port or a percent-encoded character makes a different
// issuer (SEP-2468), as a mix-up attacker's look-alike would.
func sameIssuer(a, b string) bool {
	return a == b
}

// resourceCovers reports whether the resource identifier in metadata names
// the server URL: same scheme and host, and a path that is the server's or
// a parent of it (RFC 9728 §3.3; RFC 8707).
func resourceCovers(resource, server string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(server)
	if err1 != nil || err2 != nil {
		return false
	}
	if !httpredirect.SameOrigin(r, s) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// CanonicalResource is the server URL as a resource indicator (RFC 8707):
// lower-case scheme and host, no fragment, no query, no trailing slash.
func CanonicalResource(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("oauth: server URL %q is not an absolute http(s) URL", server)
	}
	out := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	s := out.String()
	if out.Path != "/" {
		return s, nil
	}
	return strings.TrimSuffix(s, "/"), nil
}

// getJSON fetches a document; a 404 (or other 4xx) is ErrMetadataNotFound.
func getJSON(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("oauth: metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(protocolVersionHeader, protocolVersion)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("oauth: reading %s: %w", u, err)
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, fmt.Errorf("%w: %s answered %d", ErrMetadataNotFound, u, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: %s answered %d", u, resp.StatusCode)
	}
	if len(body) > maxMetadataBytes {
		return nil, fmt.Errorf("oauth: %s is larger than %d bytes", u, maxMetadataBytes)
	}
	return body, nil
}

// The MCP protocol version sent with discovery requests, as the spec asks.
const (
	protocolVersionHeader = "MCP-Protocol-Version"
	protocolVersion       = "2025-11-25"
)
