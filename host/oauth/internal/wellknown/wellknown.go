// Package wellknown holds the URL rules of OAuth discovery: where a
// protected resource's metadata (RFC 9728) and an issuer's metadata (RFC
// 8414, OpenID discovery) may be, which resource identifiers cover a
// server URL, and which URLs a document may name (absolute http(s), no
// fragment, plain http on loopback only); and fetching one document,
// bounded, with the MCP protocol version the spec asks discovery to send.
package wellknown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/internal/httpredirect"
)

// CheckURL accepts absolute http(s) URLs without a fragment; with secure
// set, plain http only for a loopback host.
func CheckURL(field, raw string, secure bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("oauth: %s is not an absolute http(s) URL", field)
	}
	if u.Fragment != "" {
		return fmt.Errorf("oauth: %s has a fragment", field)
	}
	if secure && u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		return fmt.Errorf("oauth: %s must use https (http only on a loopback host)", field)
	}
	return nil
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ResourceMetadataURLs lists where a server's protected resource metadata
// may be, in the order the spec gives: path-based first, then the root.
func ResourceMetadataURLs(server string) ([]string, error) {
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

// ServerMetadataURLs lists where an issuer's metadata may be (MCP
// authorization spec, "Authorization Server Metadata Discovery").
func ServerMetadataURLs(issuer string) ([]string, error) {
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

// ResourceCovers reports whether the resource identifier in metadata names
// the server URL: same scheme and host, and a path that is the server's or
// a parent of it (RFC 9728 §3.3; RFC 8707).
func ResourceCovers(resource, server string) bool {
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

// MaxDocumentBytes bounds a metadata document (and the token endpoint's
// answer, which oauth reads with the same bound).
const MaxDocumentBytes = 1 << 20

// ErrNotFound means no metadata document was found where one may be
// (oauth.ErrMetadataNotFound).
var ErrNotFound = errors.New("oauth: metadata not found")

// Fetch gets a JSON document of at most MaxDocumentBytes, sending the MCP
// protocol version as the spec asks; a 404 (or other 4xx) is ErrNotFound.
func Fetch(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("oauth: metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(ProtocolVersionHeader, ProtocolVersion)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("oauth: reading %s: %w", u, err)
	}
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return nil, fmt.Errorf("%w: %s answered %d", ErrNotFound, u, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: %s answered %d", u, resp.StatusCode)
	}
	if len(body) > MaxDocumentBytes {
		return nil, fmt.Errorf("oauth: %s is larger than %d bytes", u, MaxDocumentBytes)
	}
	return body, nil
}

// The MCP protocol version sent with discovery requests, as the spec asks.
const (
	ProtocolVersionHeader = "MCP-Protocol-Version"
	ProtocolVersion       = "2025-11-25"
)
