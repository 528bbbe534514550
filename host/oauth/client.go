package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
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

// Logout deletes the subject's tokens for this server.
func (c *Client) Logout(ctx context.Context, subject string) error {
	return c.store.Delete(ctx, Key{Subject: subject, Resource: c.resource})
}

// ParsePrivateKey reads a PEM private key (PKCS#8, SEC 1 EC or PKCS#1
// RSA) for private_key_jwt client authentication. Errors never quote the
// key.
func ParsePrivateKey(data []byte) (crypto.Signer, error) { return jose.ParsePrivateKey(data) }
