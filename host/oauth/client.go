package oauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
	"github.com/agenthost/agenthost/host/oauth/internal/tokenwire"
	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

// Grant is the OAuth grant a Client uses to get tokens.
type Grant string

// The grants supported.
const (
	// GrantAuthorizationCode is the default: a person logs in through a
	// browser (PKCE S256).
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials is for machine-to-machine servers: the client
	// authenticates as itself (secret or private_key_jwt), no person.
	GrantClientCredentials Grant = "client_credentials"
	// GrantIDJAG is enterprise-managed authorization (SEP-990): the
	// person's ID token is exchanged at the enterprise identity provider
	// for an ID-JAG (RFC 8693), which the client presents to the
	// authorization server with the JWT bearer grant (RFC 7523). No
	// browser.
	GrantIDJAG Grant = "id-jag"
	// GrantJWTBearer is workload identity federation (SEP-1933): the
	// workload presents an assertion its platform issued (a JWT whose
	// audience is the authorization server) with the JWT bearer grant
	// (RFC 7523). No browser, and no other grant after a refusal.
	GrantJWTBearer Grant = "jwt-bearer"
)

// Token endpoint authentication methods.
const (
	AuthClientSecretBasic = "client_secret_basic"
	AuthClientSecretPost  = "client_secret_post"
	AuthNone              = "none"
	AuthPrivateKeyJWT     = "private_key_jwt"
)

// Config describes the client of one protected MCP server.
type Config struct {
	// ServerURL is the MCP endpoint (streamable HTTP or SSE URL).
	ServerURL string
	// ClientID and ClientSecret are a pre-registered client. Without a
	// ClientID the client uses a Client ID Metadata Document
	// (ClientMetadataURL) where the server supports one, else dynamic
	// client registration.
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is the https URL of this client's metadata
	// document, used as its client_id where the server supports it.
	ClientMetadataURL string
	// ClientName is sent in dynamic client registration ("agenthost").
	ClientName string
	// Scopes, when set, are always requested (with those a challenge asks
	// for). Otherwise the challenge's scope is requested, else the
	// resource's scopes_supported, else none.
	Scopes []string
	// TokenEndpointAuthMethod forces the token endpoint authentication
	// method; by default it follows registration and the server metadata.
	TokenEndpointAuthMethod string
	// Grant is GrantAuthorizationCode (default), GrantClientCredentials,
	// GrantIDJAG or GrantJWTBearer.
	Grant Grant
	// Assertion returns the workload's assertion (GrantJWTBearer), read
	// each time a token is needed. Its errors must not contain it.
	Assertion func(context.Context) (string, error)
	// DPoP says when tokens are DPoP-bound (RFC 9449): DPoPAuto (default),
	// DPoPRequired or DPoPOff.
	DPoP DPoPMode
	// IDPTokenEndpoint, IDPClientID and IDPClientSecret are the enterprise
	// identity provider's token endpoint and this client's registration
	// there (GrantIDJAG; without a secret the client id is sent in the
	// form).
	IDPTokenEndpoint string
	IDPClientID      string
	IDPClientSecret  string
	// IDToken returns the person's ID token issued by the identity
	// provider (GrantIDJAG), read each time a token is needed. Its errors
	// must not contain the token.
	IDToken func(context.Context) (string, error)
	// PrivateKey signs private_key_jwt client assertions (see
	// ParsePrivateKey).
	PrivateKey crypto.Signer
	// Store keeps the tokens; a new MemoryStore when nil.
	Store TokenStore
	// HTTPClient makes the discovery, registration and token requests;
	// a client with a 30 s timeout when nil.
	HTTPClient *http.Client
	// MaxAttempts bounds the authorization attempts (refresh, login,
	// step-up) for one request; 3 when zero.
	MaxAttempts int
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// Client runs the MCP authorization flow for one server. It is safe for
// concurrent use by many subjects.
type Client struct {
	cfg      Config
	resource string
	origin   *url.URL
	hc       *http.Client
	store    TokenStore
	now      func() time.Time

	nonces jose.Nonces // DPoP nonces the servers asked for

	mu        sync.Mutex
	disc      *discovery
	challenge Challenge // the last Bearer challenge the server sent
	pending   map[string]*pending
	reg       map[string]clientReg // dynamic registrations by redirect URI
	refusals  map[string]refusal   // refused jwt-bearer assertions by subject

	locks [64]sync.Mutex
}

type discovery struct {
	prmURL   string
	prm      *ResourceMetadata // nil on the 2025-03-26 fallback
	as       *ServerMetadata
	issuer   string
	resource string // the resource indicator to send
}

type clientReg struct {
	id, secret, method string
}

type pending struct {
	subject, verifier, redirectURI, issuer, resource string
	issRequired                                      bool
	scopes                                           []string
	reg                                              clientReg
	tokenEndpoint                                    string
	dpopKey                                          *ecdsa.PrivateKey
	created                                          time.Time
}

// Bounds of the pending authorizations and registrations a Client keeps.
const (
	maxPending     = 10000
	pendingTTL     = 10 * time.Minute
	maxRegistered  = 16
	requestTimeout = 30 * time.Second
)

// NewClient returns a Client for cfg.ServerURL.
func NewClient(cfg Config) (*Client, error) {
	res, err := CanonicalResource(cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	switch cfg.Grant {
	case "":
		cfg.Grant = GrantAuthorizationCode
	case GrantAuthorizationCode:
	case GrantClientCredentials:
		if cfg.ClientID == "" {
			return nil, errors.New("oauth: the client_credentials grant needs a client id")
		}
	case GrantIDJAG:
		if cfg.ClientID == "" {
			return nil, errors.New("oauth: the id-jag grant needs a client id")
		}
		if err := wellknown.CheckURL("the identity provider's token endpoint", cfg.IDPTokenEndpoint, true); err != nil {
			return nil, err
		}
		if cfg.IDToken == nil {
			return nil, errors.New("oauth: the id-jag grant needs an ID token source")
		}
	case GrantJWTBearer:
		if cfg.Assertion == nil {
			return nil, errors.New("oauth: the jwt-bearer grant needs an assertion source")
		}
	default:
		return nil, fmt.Errorf("oauth: unknown grant %q (authorization_code, client_credentials, id-jag or jwt-bearer)", cfg.Grant)
	}
	switch cfg.DPoP {
	case "":
		cfg.DPoP = DPoPAuto
	case DPoPAuto, DPoPRequired, DPoPOff:
	default:
		return nil, fmt.Errorf("oauth: unknown dpop mode %q (auto, required or off)", cfg.DPoP)
	}
	switch cfg.TokenEndpointAuthMethod {
	case "", AuthClientSecretBasic, AuthClientSecretPost, AuthNone:
	case AuthPrivateKeyJWT:
		if cfg.PrivateKey == nil {
			return nil, errors.New("oauth: private_key_jwt needs a private key")
		}
	default:
		return nil, fmt.Errorf("oauth: unknown token endpoint auth method %q", cfg.TokenEndpointAuthMethod)
	}
	if cfg.PrivateKey != nil {
		if _, err := jose.SigningAlg(cfg.PrivateKey); err != nil {
			return nil, err
		}
	}
	if cfg.ClientMetadataURL != "" {
		u, err := url.Parse(cfg.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return nil, errors.New("oauth: the client metadata URL must be an https URL with a path")
		}
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "agenthost"
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	origin, _ := url.Parse(res)
	c := &Client{cfg: cfg, resource: res, origin: origin, hc: cfg.HTTPClient, store: cfg.Store, now: cfg.Now,
		pending: map[string]*pending{}, reg: map[string]clientReg{}}
	// Redirects stay on the origin of the request (docs/config.md,
	// "Redirects"): a token or registration request carries the client's
	// credentials, and metadata is validated against the URL asked for.
	c.hc = httpredirect.Apply(cfg.HTTPClient, httpredirect.Policy{})
	if cfg.HTTPClient == nil {
		c.hc.Timeout = requestTimeout
	}
	if c.store == nil {
		c.store = NewMemoryStore()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// sameOrigin reports whether u has the server URL's scheme, host and port.
func (c *Client) sameOrigin(u *url.URL) bool {
	return httpredirect.SameOrigin(u, c.origin)
}

// Resource is the canonical server URL the Client's tokens are stored under.
func (c *Client) Resource() string { return c.resource }

// Store is the Client's token store.
func (c *Client) Store() TokenStore { return c.store }

// lockFor serialises token renewal and logins of one subject.
func (c *Client) lockFor(subject string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return &c.locks[h.Sum32()%uint32(len(c.locks))]
}

// noteChallenge remembers the server's last Bearer challenge (its scope
// and resource_metadata drive the next authorization).
func (c *Client) noteChallenge(ch Challenge) {
	c.mu.Lock()
	c.challenge = ch
	c.mu.Unlock()
}

// discover finds the protected resource metadata and the authorization
// server metadata, once; again when a challenge names other metadata.
func (c *Client) discover(ctx context.Context) (*discovery, error) {
	c.mu.Lock()
	d, ch := c.disc, c.challenge
	c.mu.Unlock()
	rmURL := ch.Param("resource_metadata")
	if d != nil && (rmURL == "" || rmURL == d.prmURL) {
		return d, nil
	}
	d, err := c.fetchDiscovery(ctx, rmURL)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.disc = d
	c.mu.Unlock()
	return d, nil
}

// forgetDiscovery drops the discovered metadata: the next discover reads
// it again.
func (c *Client) forgetDiscovery() {
	c.mu.Lock()
	c.disc = nil
	c.mu.Unlock()
}

func (c *Client) fetchDiscovery(ctx context.Context, rmURL string) (*discovery, error) {
	candidates, err := wellknown.ResourceMetadataURLs(c.cfg.ServerURL)
	if err != nil {
		return nil, err
	}
	if rmURL != "" {
		if err := wellknown.CheckURL("resource_metadata", rmURL, false); err != nil {
			return nil, err
		}
		candidates = append([]string{rmURL}, candidates...)
	}
	for _, u := range candidates {
		body, err := getJSON(ctx, c.hc, u)
		if errors.Is(err, ErrMetadataNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		prm, err := ParseResourceMetadata(body)
		if err != nil {
			return nil, err
		}
		if !wellknown.ResourceCovers(prm.Resource, c.cfg.ServerURL) {
			return nil, fmt.Errorf("oauth: the protected resource metadata at %s names resource %s, not %s", u, prm.Resource, c.resource)
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("oauth: the protected resource metadata at %s names no authorization server", u)
		}
		issuer := prm.AuthorizationServers[0]
		as, err := c.serverMetadata(ctx, issuer)
		if err != nil {
			return nil, err
		}
		return &discovery{prmURL: u, prm: prm, as: as, issuer: as.Issuer, resource: prm.Resource}, nil
	}
	return c.legacyDiscovery(ctx)
}

// serverMetadata fetches an issuer's metadata from the well-known URIs and
// checks that it names the same issuer (RFC 8414 §3.3).
func (c *Client) serverMetadata(ctx context.Context, issuer string) (*ServerMetadata, error) {
	urls, err := wellknown.ServerMetadataURLs(issuer)
	if err != nil {
		return nil, err
	}
	for _, u := range urls {
		body, err := getJSON(ctx, c.hc, u)
		if errors.Is(err, ErrMetadataNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := ParseServerMetadata(body)
		if err != nil {
			return nil, err
		}
		if !sameIssuer(m.Issuer, issuer) {
			return nil, fmt.Errorf("oauth: the metadata at %s names issuer %s, not %s", u, m.Issuer, issuer)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: no authorization server metadata for %s", ErrMetadataNotFound, issuer)
}

// legacyDiscovery is the 2025-03-26 fallback for servers without protected
// resource metadata: the authorization server is the server's origin, its
// metadata at the origin's well-known URI, else the default endpoints
// /authorize, /token and /register.
func (c *Client) legacyDiscovery(ctx context.Context) (*discovery, error) {
	u, _ := url.Parse(c.cfg.ServerURL)
	origin := u.Scheme + "://" + u.Host
	body, err := getJSON(ctx, c.hc, origin+"/.well-known/oauth-authorization-server")
	var as *ServerMetadata
	switch {
	case err == nil:
		if as, err = ParseServerMetadata(body); err != nil {
			return nil, err
		}
	case errors.Is(err, ErrMetadataNotFound):
		if u.Scheme != "https" && !wellknown.IsLoopback(u.Hostname()) {
			return nil, fmt.Errorf("oauth: %s has no authorization metadata and is not https", origin)
		}
		as = &ServerMetadata{Issuer: origin, AuthorizationEndpoint: origin + "/authorize",
			TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register",
			CodeChallengeMethodsSupported: []string{"S256"}}
	default:
		return nil, err
	}
	return &discovery{as: as, issuer: as.Issuer, resource: c.resource}, nil
}

// challengeScopes are the scopes to request when the caller names none:
// those selectScopes derives from the last challenge the server sent.
func (c *Client) challengeScopes(d *discovery) []string {
	c.mu.Lock()
	ch := c.challenge
	c.mu.Unlock()
	return c.selectScopes(d, ch.Scopes())
}

// selectScopes picks the scopes to request: the configured ones plus the
// challenge's; without configured ones, the challenge's, else the
// resource's scopes_supported, else none.
func (c *Client) selectScopes(d *discovery, challenge []string) []string {
	if len(c.cfg.Scopes) > 0 {
		return unionScopes(c.cfg.Scopes, challenge)
	}
	if len(challenge) > 0 {
		return slices.Clone(challenge)
	}
	if d.prm != nil {
		return slices.Clone(d.prm.ScopesSupported)
	}
	return nil
}

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

// AuthRequest starts an authorization code flow.
type AuthRequest struct {
	// Subject is the end user or tenant the token will act for.
	Subject string
	// RedirectURI receives the authorization response.
	RedirectURI string
	// Scopes to request; when nil they are selected from the server's last
	// challenge (see Config.Scopes).
	Scopes []string
}

// StartAuthorization prepares an authorization request and returns the URL
// to send the end user's browser to, and the request's state. The request
// is completed by CompleteAuthorization with the redirect's query.
func (c *Client) StartAuthorization(ctx context.Context, r AuthRequest) (authURL, state string, err error) {
	if c.cfg.Grant != GrantAuthorizationCode {
		return "", "", fmt.Errorf("oauth: the %s grant has no authorization step", c.cfg.Grant)
	}
	if err := wellknown.CheckURL("redirect URI", r.RedirectURI, true); err != nil {
		return "", "", err
	}
	d, err := c.discover(ctx)
	if err != nil {
		return "", "", err
	}
	if d.as.AuthorizationEndpoint == "" {
		return "", "", fmt.Errorf("oauth: the authorization server %s has no authorization_endpoint", d.issuer)
	}
	if !d.as.supportsPKCE() {
		return "", "", fmt.Errorf("oauth: the authorization server %s does not advertise PKCE S256 (code_challenge_methods_supported); refusing to authorize without it", d.issuer)
	}
	reg, err := c.identity(ctx, d, r.RedirectURI)
	if err != nil {
		return "", "", err
	}
	key, err := c.grantKey(d)
	if err != nil {
		return "", "", err
	}
	scopes := r.Scopes
	if scopes == nil {
		scopes = c.challengeScopes(d)
	}
	verifier := jose.RandomString(32)
	state = jose.RandomString(32)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {reg.id},
		"redirect_uri":          {r.RedirectURI},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {d.resource},
	}
	if len(scopes) > 0 {
		q.Set("scope", scopeString(scopes))
	}
	u, err := url.Parse(d.as.AuthorizationEndpoint)
	if err != nil {
		return "", "", fmt.Errorf("oauth: authorization_endpoint: %w", err)
	}
	orig := u.Query()
	for k, v := range q {
		orig[k] = v
	}
	u.RawQuery = orig.Encode()
	p := &pending{subject: r.Subject, verifier: verifier, redirectURI: r.RedirectURI, issuer: d.issuer,
		issRequired: d.as.AuthorizationResponseIssParamSupported, resource: d.resource, scopes: scopes,
		reg: reg, tokenEndpoint: d.as.TokenEndpoint, dpopKey: key, created: c.now()}
	if err := c.addPending(state, p); err != nil {
		return "", "", err
	}
	return u.String(), state, nil
}

func (c *Client) addPending(state string, p *pending) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxPending {
		now := c.now()
		for s, q := range c.pending {
			if now.Sub(q.created) > pendingTTL {
				delete(c.pending, s)
			}
		}
		if len(c.pending) >= maxPending {
			return errors.New("oauth: too many authorizations in progress")
		}
	}
	c.pending[state] = p
	return nil
}

func (c *Client) takePending(state string) (*pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[state]
	if !ok {
		return nil, false
	}
	delete(c.pending, state)
	if c.now().Sub(p.created) > pendingTTL {
		return nil, false
	}
	return p, true
}

// ErrInvalidState means the authorization response's state matches no
// authorization in progress (unknown, used or expired): possibly forged.
var ErrInvalidState = errors.New("oauth: the authorization response's state matches no authorization in progress")

// AuthorizationError is an error the authorization server reported in its
// redirect or token endpoint answer. Description is the server's text,
// cut short.
type AuthorizationError struct {
	Code        string
	Description string
	Status      int // HTTP status of a token endpoint answer; 0 for a redirect
}

func (e *AuthorizationError) Error() string {
	msg := "oauth: the authorization server answered " + e.Code
	if e.Status != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// CompleteAuthorization finishes the authorization started with the state
// in query: it checks the iss parameter (RFC 9207), exchanges the code
// (with the PKCE verifier and the resource) and stores the token under
// the subject of the request. It returns that subject.
func (c *Client) CompleteAuthorization(ctx context.Context, query url.Values) (subject string, err error) {
	p, ok := c.takePending(query.Get("state"))
	if !ok {
		return "", ErrInvalidState
	}
	if code := query.Get("error"); code != "" {
		return p.subject, &AuthorizationError{Code: tokenwire.Clip(code, 64), Description: tokenwire.Clip(query.Get("error_description"), 200)}
	}
	iss := query.Get("iss")
	if iss != "" && !sameIssuer(iss, p.issuer) {
		return p.subject, fmt.Errorf("oauth: the authorization response comes from issuer %s, not %s (RFC 9207)", tokenwire.Clip(iss, 200), p.issuer)
	}
	if iss == "" && p.issRequired {
		return p.subject, fmt.Errorf("oauth: the authorization response has no iss parameter, which %s promises (RFC 9207)", p.issuer)
	}
	code := query.Get("code")
	if code == "" {
		return p.subject, errors.New("oauth: the authorization response has no code")
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {p.redirectURI},
		"code_verifier": {p.verifier},
		"resource":      {p.resource},
	}
	tok, err := c.tokenRequest(ctx, p.tokenEndpoint, p.issuer, p.reg, form, p.dpopKey)
	if err != nil {
		return p.subject, err
	}
	return p.subject, c.keepToken(ctx, p.subject, p.issuer, tok, p.scopes)
}

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

// Token returns a usable token of the subject: the stored one, renewed by
// refresh (or, for the client credentials grant, a new one) when it is
// expired. ErrNoToken when the subject has none and one needs a login.
func (c *Client) Token(ctx context.Context, subject string) (*Token, error) {
	tok, _, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource})
	if err == nil && !tok.expired(c.now()) {
		return tok, nil
	}
	if err != nil && !errors.Is(err, ErrNoToken) {
		return nil, fmt.Errorf("oauth: reading the token store: %w", err)
	}
	if err != nil && !c.Unattended() {
		return nil, ErrNoToken
	}
	l := c.lockFor(subject)
	l.Lock()
	defer l.Unlock()
	// Another request may have renewed it meanwhile.
	tok, key, err := c.store.Get(ctx, Key{Subject: subject, Resource: c.resource})
	if err == nil && !tok.expired(c.now()) {
		return tok, nil
	}
	if err == nil && tok.RefreshToken != "" {
		nt, rerr := c.refresh(ctx, key, tok)
		if rerr == nil {
			return nt, nil
		}
		if !c.Unattended() {
			return nil, rerr
		}
	}
	if c.Unattended() {
		var scopes []string
		if tok != nil {
			scopes = tok.Scopes
		}
		return c.unattended(ctx, subject, scopes)
	}
	return nil, ErrNoToken
}

// Unattended reports whether the Client's grant gets tokens without a
// person's login (client_credentials, id-jag, jwt-bearer).
func (c *Client) Unattended() bool {
	return c.cfg.Grant == GrantClientCredentials || c.cfg.Grant == GrantIDJAG || c.cfg.Grant == GrantJWTBearer
}

// unattended gets a new token with the Client's unattended grant (the
// scopes asked for, else those of the server's last challenge) and stores
// it.
func (c *Client) unattended(ctx context.Context, subject string, scopes []string) (*Token, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	if scopes == nil {
		scopes = c.challengeScopes(d)
	}
	var tok *Token
	switch c.cfg.Grant {
	case GrantIDJAG:
		tok, err = c.idJAG(ctx, d, scopes)
	case GrantJWTBearer:
		tok, err = c.jwtBearer(ctx, subject, d, scopes)
	default:
		tok, err = c.clientCredentials(ctx, d, scopes)
	}
	if err != nil {
		return nil, err
	}
	if err := c.keepToken(ctx, subject, d.issuer, tok, scopes); err != nil {
		return nil, err
	}
	return tok, nil
}

// keepToken stores a new token of the subject issued by issuer; without
// scopes in the answer it is taken to have those requested.
func (c *Client) keepToken(ctx context.Context, subject, issuer string, tok *Token, requested []string) error {
	if len(tok.Scopes) == 0 {
		tok.Scopes = slices.Clone(requested)
	}
	if err := c.store.Put(ctx, Key{Subject: subject, Resource: c.resource, Issuer: issuer}, tok); err != nil {
		return fmt.Errorf("oauth: storing the token: %w", err)
	}
	return nil
}

// refresh renews tok with its refresh token and stores the result. A
// rotated refresh token replaces the old one; without one in the answer
// the old one is kept. An invalid_grant answer deletes the stored token
// (the subject must log in again).
func (c *Client) refresh(ctx context.Context, key Key, tok *Token) (*Token, error) {
	d, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	if !sameIssuer(key.Issuer, d.issuer) {
		// The resource now names another authorization server. The
		// refresh token, and the client it was issued to (a registration's
		// secret), belong to the issuer that issued them and are sent
		// nowhere else: the token is dropped and the subject logs in again
		// at the new one.
		_ = c.store.Delete(ctx, key)
		return nil, fmt.Errorf("%w (the server's authorization server is now %s, not %s, which issued the token: log in again)",
			ErrNoToken, d.issuer, key.Issuer)
	}
	reg := clientReg{id: tok.ClientID, secret: tok.ClientSecret, method: tok.AuthMethod}
	if reg.id == "" {
		reg = clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "resource": {d.resource}}
	// A DPoP-bound refresh token is renewed with its own key (RFC 9449
	// §5.0); a bearer one stays bearer.
	nt, err := c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, tok.DPoPKey)
	if err != nil {
		var ae *AuthorizationError
		if errors.As(err, &ae) && ae.Code == "invalid_grant" {
			// Another process sharing the store may have used (and
			// rotated) this refresh token first: take its result.
			if cur, _, gerr := c.store.Get(ctx, key); gerr == nil && cur.RefreshToken != tok.RefreshToken && !cur.expired(c.now()) {
				return cur, nil
			}
			_ = c.store.Delete(ctx, key)
			return nil, fmt.Errorf("%w (the refresh token was refused)", ErrNoToken)
		}
		return nil, err
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = tok.RefreshToken
	}
	if len(nt.Scopes) == 0 {
		nt.Scopes = slices.Clone(tok.Scopes)
	}
	if err := c.store.Put(ctx, Key{Subject: key.Subject, Resource: c.resource, Issuer: key.Issuer}, nt); err != nil {
		return nil, fmt.Errorf("oauth: storing the token: %w", err)
	}
	return nt, nil
}

// clientCredentials gets a token with the client credentials grant.
func (c *Client) clientCredentials(ctx context.Context, d *discovery, scopes []string) (*Token, error) {
	reg := clientReg{id: c.cfg.ClientID, secret: c.cfg.ClientSecret, method: c.authMethod(d.as, c.cfg.ClientSecret, "")}
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {d.resource}}
	if len(scopes) > 0 {
		form.Set("scope", scopeString(scopes))
	}
	key, err := c.grantKey(d)
	if err != nil {
		return nil, err
	}
	return c.tokenRequest(ctx, d.as.TokenEndpoint, d.issuer, reg, form, key)
}

// Logout deletes the subject's tokens for this server.
func (c *Client) Logout(ctx context.Context, subject string) error {
	return c.store.Delete(ctx, Key{Subject: subject, Resource: c.resource})
}

// Probe sends the server an unauthenticated MCP initialize request and
// remembers the Bearer (or DPoP) challenge of a 401 or 403 answer (its
// resource_metadata and scope guide discovery). It reports whether the
// server asked for authorization.
func (c *Client) Probe(ctx context.Context) (bool, error) {
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"` + c.cfg.ClientName + `","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.ServerURL, strings.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("oauth: probe: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocolVersionHeader, protocolVersion)
	resp, err := c.hc.Do(req)
	if err != nil {
		return false, fmt.Errorf("oauth: probing %s: %w", c.resource, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return false, nil
	}
	if ch, ok := AuthChallenge(resp.Header, false); ok {
		c.noteChallenge(ch)
	}
	return true, nil
}

// HasPending reports whether state names an authorization in progress.
func (c *Client) HasPending(state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[state]
	return ok
}

// ParsePrivateKey reads a PEM private key (PKCS#8, SEC 1 EC or PKCS#1
// RSA) for private_key_jwt client authentication. Errors never quote the
// key.
func ParsePrivateKey(data []byte) (crypto.Signer, error) { return jose.ParsePrivateKey(data) }
