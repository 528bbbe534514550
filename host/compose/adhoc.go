package compose

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// AdHocServer is the name of the one server of an ad-hoc configuration
// (AdHocConfig): a server reached at a URL with no config file, as
// `agenthost call --url` and `tools --url` reach it.
const AdHocServer = "url"

// AdHocError is a bad parameter of an ad-hoc server: Param names it ("url"
// or "transport"), Msg says what is wrong with its value.
type AdHocError struct{ Param, Msg string }

func (e *AdHocError) Error() string { return e.Param + ": " + e.Msg }

// AdHocConfig is the configuration of one server at rawURL (named
// AdHocServer) and nothing else: transport is "http" (streamable HTTP, also
// for "") or "sse" (legacy HTTP+SSE), the OAuth settings come from the
// environment (OAuthFromEnv, read through getenv), the policy is
// AdHocApprovals', and the administrator's managed policy applies as it
// does to a configured server. A URL that is not http(s) or a transport of
// another name is an *AdHocError.
func AdHocConfig(rawURL, transport string, getenv func(string) string) (*config.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &AdHocError{Param: "url", Msg: fmt.Sprintf("%q is not an http(s) URL", rawURL)}
	}
	if transport == "" {
		transport = "http"
	}
	if transport != "http" && transport != "sse" {
		return nil, &AdHocError{Param: "transport", Msg: fmt.Sprintf("%q is not http or sse", transport)}
	}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{AdHocServer: {URL: rawURL, Type: config.Transport(transport), OAuth: OAuthFromEnv(getenv)}},
		Approvals:  AdHocApprovals(AdHocServer),
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The administrator's managed policy applies to ad-hoc servers too.
	if err := cfg.ApplyManaged(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// AdHocApprovals is the policy of an ad-hoc server's calls. There is no
// operator catalogue or rule set, and the strict bucket would make every
// tool without trusted metadata uncallable (minTrustLevel 5, two
// approvers), so the person who typed the call decides it: the risk stays
// unknown (the fail-closed values), but every call is one ask for one
// approver (answered as the session's approver answers: the CLI's
// --approve).
func AdHocApprovals(server string) rules.Config {
	single := "single"
	return rules.Config{
		Catalogue: []rules.CatalogueEntry{{
			Server:   server,
			Tool:     "*",
			Metadata: risk.RawMetadata{ApprovalRecommendation: &single, MinTrustLevel: 1},
		}},
		NoMatch: "ask",
	}
}

// Fallback is what ConnectAdHoc did about the transport.
type Fallback int

const (
	// FallbackNone: the first host is kept (it connected, or failed in a
	// way no other transport would get past).
	FallbackNone Fallback = iota
	// FallbackSSE: streamable HTTP failed and legacy SSE connected.
	FallbackSSE
	// FallbackFailed: both failed; the SSE host is returned, and
	// AdHocConnect.HTTPError says why streamable HTTP failed.
	FallbackFailed
)

// AdHocConnect is ConnectAdHoc's result.
type AdHocConnect struct {
	// Host is the host to use: h, or the one build made for legacy SSE.
	Host     *host.Host
	Fallback Fallback
	// HTTPError is the streamable HTTP connection's error (FallbackFailed).
	HTTPError string
}

// ConnectAdHoc connects h, built from AdHocConfig(rawURL, "http", ...), and
// when its server answered but not as a streamable HTTP endpoint (a legacy
// HTTP+SSE server answers a POST with 4xx) tries the legacy SSE transport,
// as the MCP specification's backwards-compatibility section says: build
// makes the host of that configuration, and h is then closed. No fallback
// is tried past an unreachable server or an OAuth failure, which no other
// transport would get past.
func ConnectAdHoc(ctx context.Context, h *host.Host, rawURL string, getenv func(string) string, build func(*config.Config) (*host.Host, error)) (AdHocConnect, error) {
	h.Connect(ctx)
	snap := h.Server(AdHocServer)
	if !TryLegacySSE(snap) {
		return AdHocConnect{Host: h}, nil
	}
	cfg, err := AdHocConfig(rawURL, "sse", getenv)
	if err != nil {
		return AdHocConnect{}, err
	}
	sse, err := build(cfg)
	if err != nil {
		return AdHocConnect{}, err
	}
	_ = h.Close()
	sse.Connect(ctx)
	if s := sse.Server(AdHocServer); s != nil && s.Status == host.StatusConnected {
		return AdHocConnect{Host: sse, Fallback: FallbackSSE}, nil
	}
	return AdHocConnect{Host: sse, Fallback: FallbackFailed, HTTPError: snap.Error}, nil
}

// TryLegacySSE reports whether an ad-hoc server that snap describes,
// connected over streamable HTTP, is worth trying over legacy SSE: it
// failed, and not as unreachable or for want of authorization.
func TryLegacySSE(snap *host.ServerSnapshot) bool {
	return snap != nil && snap.Status == host.StatusError && !unreachable(snap.Error) && !strings.Contains(snap.Error, "oauth: ")
}

// unreachable reports a connection error that no other transport would
// get past.
func unreachable(msg string) bool {
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "deadline exceeded", "network is unreachable"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
