package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/oauth"
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
	return newOAuthClient(sc, store, nil)
}

// newOAuthClient is NewOAuthClient with the managed allowlist's check of
// the assertionCommand (nil: none).
func newOAuthClient(sc *config.Server, store oauth.TokenStore, admitAssertion func(string) (string, error)) (*oauth.Client, error) {
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
		cfg.IdPTokenEndpoint, cfg.IdPClientID, cfg.IdPClientSecret = o.IdPTokenEndpoint, o.IdPClientID, o.IdPClientSecret
		if o.IDToken != "" || o.IDTokenFile != "" {
			cfg.IDToken = credentialSource("oauth.idTokenFile", o.IDToken, o.IDTokenFile)
		}
		cfg.DPoP = oauth.DPoPMode(o.DPoP)
		if o.AssertionFile != "" || o.AssertionCommand != "" {
			src, err := assertionSource(o, admitAssertion)
			if err != nil {
				return nil, err
			}
			cfg.Assertion = src
		}
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
		IdPTokenEndpoint:        getenv("AGENTHOST_OAUTH_IDP_TOKEN_ENDPOINT"),
		IdPClientID:             getenv("AGENTHOST_OAUTH_IDP_CLIENT_ID"),
		IdPClientSecret:         getenv("AGENTHOST_OAUTH_IDP_CLIENT_SECRET"),
		IDToken:                 getenv("AGENTHOST_OAUTH_ID_TOKEN"),
		IDTokenFile:             getenv("AGENTHOST_OAUTH_ID_TOKEN_FILE"),
		AssertionFile:           getenv("AGENTHOST_OAUTH_ASSERTION_FILE"),
		AssertionCommand:        getenv("AGENTHOST_OAUTH_ASSERTION_COMMAND"),
		AssertionSHA256:         getenv("AGENTHOST_OAUTH_ASSERTION_SHA256"),
		DPoP:                    getenv("AGENTHOST_OAUTH_DPOP"),
	}
	if len(o.Scopes) == 0 {
		o.Scopes = nil
	}
	if reflect.ValueOf(*o).IsZero() {
		return nil
	}
	return o
}

// credentialSource is a credential of a grant (the ID token of id-jag, the
// assertion of jwt-bearer): the configured value, else the file's content
// (trimmed), read each time so a rotated credential is picked up. Its
// errors name the setting (key) and the file, never the credential.
func credentialSource(key, value, file string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		if file == "" {
			return value, nil
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return strings.TrimSpace(string(data)), nil
	}
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

// OAuthOptions configure the MCP authorization flow of a Host's servers
// reached by url. Each session's calls use the token of the session's
// subject (SessionOptions.Subject): sessions of different subjects never
// share a token.
type OAuthOptions struct {
	// Disabled turns the flow off for every server.
	Disabled bool
	// Store keeps the tokens; nil keeps them in memory for the Host's
	// life. The CLI uses an oauth.FileStore.
	Store oauth.TokenStore
	// Subject is the subject of the requests made for no session:
	// connecting and listing tools.
	Subject string
	// Login, when set, is called when a subject must authorize (log in, or
	// log in again with more scopes) for server; it may run c.Login (a
	// loopback redirect) and return nil to have the request retried, or
	// return an error (req itself to report that nobody can log in).
	Login func(ctx context.Context, server string, c *oauth.Client, req *oauth.AuthorizationRequiredError) error
	// RedirectURI, when set (and Login is not), is where the backend
	// serves Host.OAuthCallback: a call of a subject without a token then
	// fails with an *oauth.AuthorizationRequiredError whose AuthURL the
	// backend sends that end user to (the agent loop emits it as an
	// EventAuthorization).
	RedirectURI string
}

// newOAuthClients builds the authorization client of every enabled server
// reached by url.
func newOAuthClients(cfg *config.Config, opts OAuthOptions) (map[string]*oauth.Client, error) {
	out := map[string]*oauth.Client{}
	if opts.Disabled {
		return out, nil
	}
	store := opts.Store
	if store == nil {
		store = oauth.NewMemoryStore()
	}
	for name, sc := range cfg.MCPServers {
		if sc == nil || sc.Disabled || !OAuthEnabled(sc) {
			continue
		}
		var admit func(string) (string, error)
		if cfg.HasServerAllowlist() {
			admit = func(path string) (string, error) { return cfg.AdmitAssertionCommand(name, path) }
		}
		c, err := newOAuthClient(sc, store, admit)
		if err != nil {
			return nil, &Error{Kind: KindConfig, Message: fmt.Sprintf("mcpServers.%s.%v", name, err), Err: err}
		}
		out[name] = c
	}
	return out, nil
}

// oauthRoundTripper wraps a server's HTTP round tripper with its
// authorization client; nil for a server without one.
func oauthRoundTripper(server string, c *oauth.Client, opts OAuthOptions) func(http.RoundTripper) http.RoundTripper {
	if c == nil {
		return nil
	}
	topts := oauth.TransportOptions{Subject: opts.Subject, RedirectURI: opts.RedirectURI}
	if opts.Login != nil {
		topts.Authorize = func(ctx context.Context, req *oauth.AuthorizationRequiredError) error {
			return opts.Login(ctx, server, c, req)
		}
	}
	return func(base http.RoundTripper) http.RoundTripper { return c.Transport(base, topts) }
}

// OAuthClient returns the authorization client of a server, for a backend
// that completes logins itself (Client.CallbackHandler, StartAuthorization).
func (h *Host) OAuthClient(server string) (*oauth.Client, bool) {
	c, ok := h.oauth[server]
	return c, ok
}

// OAuthCallback is the handler completing the logins started for every
// server's end users (OAuthOptions.RedirectURI routes to it): it finds
// the authorization by its state. done, when not nil, is told the server,
// the subject and the outcome of each completed redirect.
func (h *Host) OAuthCallback(done func(server, subject string, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each client knows only its own states; try them in turn (a
		// state is random, so at most one matches).
		for _, name := range h.names {
			c, ok := h.oauth[name]
			if !ok || !c.HasPending(r.URL.Query().Get("state")) {
				continue
			}
			var cb func(string, error)
			if done != nil {
				cb = func(subject string, err error) { done(name, subject, err) }
			}
			c.CallbackHandler(cb).ServeHTTP(w, r)
			return
		}
		http.Error(w, "unknown or expired authorization", http.StatusBadRequest)
	})
}

// withSubject puts the session's subject in a call's context, for the
// OAuth round tripper; untouched when no server uses OAuth.
func (h *Host) withSubject(ctx context.Context, subject string) context.Context {
	if len(h.oauth) == 0 {
		return ctx
	}
	return oauth.WithSubject(ctx, subject)
}

// authorizationMessage is the message of the authorization failure in
// err's chain (a backoff error hides it in its own message).
func authorizationMessage(err error) string {
	var are *oauth.AuthorizationRequiredError
	var ae *oauth.AuthorizationError
	switch {
	case errors.As(err, &are):
		return are.Error()
	case errors.As(err, &ae):
		return ae.Error()
	case errors.Is(err, oauth.ErrTooManyAttempts):
		return oauth.ErrTooManyAttempts.Error()
	}
	return err.Error()
}

// authorizationFailure reports whether err is an authorization failure
// (KindAuthorization).
func authorizationFailure(err error) bool { return oauth.IsAuthorizationError(err) }
