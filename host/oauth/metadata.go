package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
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
const maxMetadataBytes = wellknown.MaxDocumentBytes

// ErrMetadataNotFound means no metadata document was found at any of the
// well-known locations tried.
var ErrMetadataNotFound = wellknown.ErrNotFound

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
	if err := wellknown.CheckURL("resource", m.Resource, false); err != nil {
		return nil, err
	}
	for _, as := range m.AuthorizationServers {
		if err := wellknown.CheckURL("authorization_servers", as, true); err != nil {
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
	if err := wellknown.CheckURL("issuer", m.Issuer, true); err != nil {
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
		if err := wellknown.CheckURL(f.name, f.v, true); err != nil {
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
