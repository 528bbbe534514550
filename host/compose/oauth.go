package compose

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
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
		cfg.IDPTokenEndpoint, cfg.IDPClientID, cfg.IDPClientSecret = o.IDPTokenEndpoint, o.IDPClientID, o.IDPClientSecret
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
		IDPTokenEndpoint:        getenv("AGENTHOST_OAUTH_IDP_TOKEN_ENDPOINT"),
		IDPClientID:             getenv("AGENTHOST_OAUTH_IDP_CLIENT_ID"),
		IDPClientSecret:         getenv("AGENTHOST_OAUTH_IDP_CLIENT_SECRET"),
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
			return nil, configErr(fmt.Errorf("mcpServers.%s.%w", name, err))
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

// authorizer is the host.Authorizer of a config's servers reached by
// url: one oauth.Client each, the tokens of every session's subject apart.
type authorizer struct {
	clients map[string]*oauth.Client
	names   []string // sorted
	opts    OAuthOptions
}

var _ host.Authorizer = (*authorizer)(nil)

// newAuthorizer builds the authorization client of every enabled server
// reached by url; nil when none uses one (or opts.Disabled).
func newAuthorizer(cfg *config.Config, opts OAuthOptions) (*authorizer, error) {
	clients, err := newOAuthClients(cfg, opts)
	if err != nil || len(clients) == 0 {
		return nil, err
	}
	names := make([]string, 0, len(clients))
	for name := range clients {
		names = append(names, name)
	}
	slices.Sort(names)
	return &authorizer{clients: clients, names: names, opts: opts}, nil
}

// Transport wraps a server's round tripper with its authorization client,
// reporting a request's failed authorization as *host.AuthorizationFailure;
// nil for a server without one.
func (a *authorizer) Transport(server string) func(http.RoundTripper) http.RoundTripper {
	wrap := oauthRoundTripper(server, a.clients[server], a.opts)
	if wrap == nil {
		return nil
	}
	return func(base http.RoundTripper) http.RoundTripper { return failures{wrap(base)} }
}

// WithSubject puts the session's subject in a request's context, for the
// round tripper.
func (a *authorizer) WithSubject(ctx context.Context, subject string) context.Context {
	return oauth.WithSubject(ctx, subject)
}

// Callback finds the authorization a redirect completes by its state.
func (a *authorizer) Callback(done func(server, subject string, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each client knows only its own states; try them in turn (a
		// state is random, so at most one matches).
		for _, name := range a.names {
			c := a.clients[name]
			if !c.HasPending(r.URL.Query().Get("state")) {
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

// OAuthClient returns the authorization client of a server of a host
// compose.New built, for a backend that completes logins itself
// (Client.CallbackHandler, StartAuthorization).
func OAuthClient(h *host.Host, server string) (*oauth.Client, bool) {
	a, ok := h.Authorizer().(*authorizer)
	if !ok {
		return nil, false
	}
	c, ok := a.clients[server]
	return c, ok
}

// failures reports the authorization failures of one request as
// *host.AuthorizationFailure, which the host tells from a broken
// connection and reports to the session (and to the model) as such.
type failures struct{ rt http.RoundTripper }

func (f failures) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.rt.RoundTrip(req)
	if err != nil && oauth.IsAuthorizationError(err) {
		return resp, authorizationFailure(err)
	}
	return resp, err
}

// authorizationFailure wraps err, an authorization failure, with the
// message of the failure in its chain (a backoff error hides it in its
// own message) and where the end user authorizes.
func authorizationFailure(err error) *host.AuthorizationFailure {
	f := &host.AuthorizationFailure{Message: err.Error(), Err: err}
	var are *oauth.AuthorizationRequiredError
	var ae *oauth.AuthorizationError
	switch {
	case errors.As(err, &are):
		f.Message, f.Subject, f.AuthURL = are.Error(), are.Subject, are.AuthURL
	case errors.As(err, &ae):
		f.Message = ae.Error()
	case errors.Is(err, oauth.ErrTooManyAttempts):
		f.Message = oauth.ErrTooManyAttempts.Error()
	}
	return f
}
