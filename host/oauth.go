package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/oauth"
)

// OAuthEnabled reports whether a server takes part in the MCP
// authorization flow: a server reached by url, without oauth.disabled and
// without a static Authorization header.
func OAuthEnabled(sc *config.Server) bool {
	if sc == nil || sc.URL == "" || (sc.OAuth != nil && sc.OAuth.Disabled) {
		return false
	}
	for h := range sc.Headers {
		if strings.EqualFold(h, "Authorization") {
			return false
		}
	}
	return true
}

// NewOAuthClient builds the authorization client of a server reached by
// url from its oauth block (which may be absent: the flow then uses
// dynamic client registration), keeping tokens in store.
func NewOAuthClient(sc *config.Server, store oauth.TokenStore) (*oauth.Client, error) {
	if !OAuthEnabled(sc) {
		return nil, errors.New("the server does not use OAuth (no url, oauth.disabled, or a static Authorization header)")
	}
	cfg := oauth.Config{ServerURL: sc.URL, Store: store}
	if o := sc.OAuth; o != nil {
		cfg.ClientID, cfg.ClientSecret = o.ClientID, o.ClientSecret
		cfg.ClientMetadataURL = o.ClientMetadataURL
		cfg.Scopes = o.Scopes
		cfg.TokenEndpointAuthMethod = o.TokenEndpointAuthMethod
		cfg.Grant = oauth.Grant(o.Grant)
		pem := []byte(o.PrivateKey)
		if o.PrivateKeyFile != "" {
			data, err := os.ReadFile(o.PrivateKeyFile)
			if err != nil {
				return nil, fmt.Errorf("oauth.privateKeyFile: %w", err)
			}
			pem = data
		}
		if len(pem) > 0 {
			key, err := oauth.ParsePrivateKey(pem)
			if err != nil {
				return nil, fmt.Errorf("oauth.privateKey: %w", err)
			}
			cfg.PrivateKey = key
		}
	}
	c, err := oauth.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	return c, nil
}

// OAuthFromEnv is the oauth block of an ad-hoc server (`call --url`,
// `auth login --url`), read from AGENTHOST_OAUTH_* environment variables
// (docs/config.md); nil when none is set.
func OAuthFromEnv(getenv func(string) string) *config.OAuth {
	o := &config.OAuth{
		ClientID:                getenv("AGENTHOST_OAUTH_CLIENT_ID"),
		ClientSecret:            getenv("AGENTHOST_OAUTH_CLIENT_SECRET"),
		ClientMetadataURL:       getenv("AGENTHOST_OAUTH_CLIENT_METADATA_URL"),
		Scopes:                  strings.Fields(getenv("AGENTHOST_OAUTH_SCOPES")),
		TokenEndpointAuthMethod: getenv("AGENTHOST_OAUTH_TOKEN_ENDPOINT_AUTH_METHOD"),
		Grant:                   getenv("AGENTHOST_OAUTH_GRANT"),
		PrivateKey:              getenv("AGENTHOST_OAUTH_PRIVATE_KEY"),
		PrivateKeyFile:          getenv("AGENTHOST_OAUTH_PRIVATE_KEY_FILE"),
	}
	if o.ClientID == "" && o.ClientSecret == "" && o.ClientMetadataURL == "" && len(o.Scopes) == 0 &&
		o.TokenEndpointAuthMethod == "" && o.Grant == "" && o.PrivateKey == "" && o.PrivateKeyFile == "" {
		return nil
	}
	return o
}

// BrowserOpener opens an authorization URL with the command in $BROWSER
// (the first of a colon-separated list; "%s" in it is replaced by the URL,
// else the URL is appended as its last argument). It does not wait for the
// browser to exit; the process is reaped in the background. ok is false
// when $BROWSER is not set.
func BrowserOpener(getenv func(string) string) (open func(ctx context.Context, authURL string) error, ok bool) {
	spec := strings.TrimSpace(strings.Split(getenv("BROWSER"), ":")[0])
	if spec == "" {
		return nil, false
	}
	return func(ctx context.Context, authURL string) error {
		fields := strings.Fields(spec)
		args := make([]string, 0, len(fields)+1)
		replaced := false
		for _, f := range fields[1:] {
			if strings.Contains(f, "%s") {
				f = strings.ReplaceAll(f, "%s", authURL)
				replaced = true
			}
			args = append(args, f)
		}
		if !replaced {
			args = append(args, authURL)
		}
		cmd := exec.Command(fields[0], args...)
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("$BROWSER: %w", err)
		}
		go func() { _ = cmd.Wait() }()
		return nil
	}, true
}
