// Package oauthtest is a test kit: an in-process OAuth 2.1 authorization
// server and a wrapper that turns an http.Handler into a protected
// resource, for tests of MCP authorization clients. Production code never
// imports it.
//
// The authorization endpoint approves at once (no login page) and
// redirects to the client's redirect URI: a test "browser" that follows
// redirects completes the flow. The user it authorizes is the value of the
// X-Test-User request header, else Options.DefaultUser.
package oauthtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// UserHeader names the user the authorization endpoint approves.
const UserHeader = "X-Test-User"

// Options configure a Server.
type Options struct {
	// DefaultUser is approved when a request has no UserHeader ("user").
	DefaultUser string
	// ScopesSupported are advertised in both metadata documents.
	ScopesSupported []string
	// RequiredScopes must all be granted for a request to the resource
	// to pass; otherwise it gets a 403 insufficient_scope (step-up).
	RequiredScopes []string
	// TokenTTL is the access tokens' lifetime (1 h when zero).
	TokenTTL time.Duration
	// AuthMethods are the token endpoint auth methods advertised
	// (["none", "client_secret_basic", "client_secret_post"] when nil).
	AuthMethods []string
	// Clients are pre-registered clients: id -> secret ("" for a public
	// client).
	Clients map[string]string
	// NoPRM serves no protected resource metadata (the 2025-03-26 case).
	NoPRM bool
	// WithheldScopes are never granted, even when requested.
	WithheldScopes []string
	// IssParameter makes the authorization endpoint send iss (RFC 9207)
	// and advertise it.
	IssParameter bool
	// IDTokens are the ID tokens the identity provider's token exchange
	// endpoint (IDPTokenEndpoint) accepts, token -> user: it exchanges
	// them for ID-JAGs (SEP-990) that the token endpoint takes with the
	// JWT bearer grant.
	IDTokens map[string]string
	// IDPClients are the identity provider's clients, id -> secret ("" for
	// a client that sends only its id).
	IDPClients map[string]string
	// Observe, when set, sees every request to the authorization server
	// with its body (read whole first, then handed on): a test checks
	// what reached this server.
	Observe func(r *http.Request, body []byte)
	// DPoP makes the servers DPoP-capable (RFC 9449, see Proofs): a token
	// request with a proof gets a token bound to its key.
	DPoP bool
	// DPoPNonce makes both servers demand a nonce in the proofs (ASNonce,
	// RSNonce), with a use_dpop_nonce answer to a proof without it.
	DPoPNonce bool
	// DPoPUnbound makes the authorization server check proofs but issue
	// bearer tokens all the same (RFC 9449 §5 allows it).
	DPoPUnbound bool
	// Assertions are the workload assertions the token endpoint accepts
	// with the JWT bearer grant (workload identity federation), assertion
	// -> workload; no client authentication is needed with one.
	Assertions map[string]string
}

// The token types and grants of enterprise-managed authorization.
const (
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	GrantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	TokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	TokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
)

// Server is an authorization server plus the protected-resource wrapper.
type Server struct {
	opts Options
	as   *httptest.Server

	mu       sync.Mutex
	codes    map[string]*grant
	access   map[string]*grant
	refresh  map[string]*grant
	clients  map[string]string
	uses     []Use
	requests map[string]int    // endpoint -> count
	jags     map[string]*grant // unused ID-JAGs
	issued   []string          // every ID-JAG issued
	jtis     map[string]bool   // DPoP proofs seen
	proofs   []Proof
}

type grant struct {
	user, client, resource, challenge, redirectURI string
	jkt                                            string // the DPoP key the token is bound to
	scopes                                         []string
	expiry                                         time.Time
}

// Use is one request the protected resource accepted.
type Use struct {
	// User the token was issued to.
	User string
	// Claimed is the X-Test-Subject header of the request (what the client
	// meant to act for), empty when absent.
	Claimed string
	// Body is the request's body (the first 64 KiB).
	Body string
}

// New starts an authorization server. Close it when done.
func New(opts Options) *Server {
	if opts.DefaultUser == "" {
		opts.DefaultUser = "user"
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.AuthMethods == nil {
		opts.AuthMethods = []string{"none", "client_secret_basic", "client_secret_post"}
	}
	s := &Server{opts: opts, codes: map[string]*grant{}, access: map[string]*grant{}, refresh: map[string]*grant{},
		clients: map[string]string{}, requests: map[string]int{}, jags: map[string]*grant{}, jtis: map[string]bool{}}
	for id, secret := range opts.Clients {
		s.clients[id] = secret
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("POST /idp/token", s.idpToken)
	var h http.Handler = mux
	if observe := opts.Observe; observe != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			observe(r, body)
			mux.ServeHTTP(w, r)
		})
	}
	s.as = httptest.NewServer(h)
	return s
}

// URL is the issuer.
func (s *Server) URL() string { return s.as.URL }

// Close stops the authorization server.
func (s *Server) Close() { s.as.Close() }

// IDPTokenEndpoint is the identity provider's token exchange endpoint
// ("idp" in Requests).
func (s *Server) IDPTokenEndpoint() string { return s.as.URL + "/idp/token" }

// IDJAGs returns every ID-JAG the identity provider issued so far.
func (s *Server) IDJAGs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Uses returns the accepted resource requests so far.
func (s *Server) Uses() []Use {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uses)
}

// Requests returns how many requests an endpoint ("authorize", "token",
// "register", "token:refresh_token", ...) received.
func (s *Server) Requests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[endpoint]
}

// Revoke invalidates every access token of a user (refresh tokens stay).
func (s *Server) Revoke(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, g := range s.access {
		if g.user == user {
			delete(s.access, t)
		}
	}
}

// RevokeAll invalidates every access and refresh token of a user.
func (s *Server) RevokeAll(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[string]*grant{s.access, s.refresh} {
		for t, g := range m {
			if g.user == user {
				delete(m, t)
			}
		}
	}
}

func (s *Server) count(endpoint string) {
	s.mu.Lock()
	s.requests[endpoint]++
	s.mu.Unlock()
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	s.count("metadata")
	m := map[string]any{
		"issuer":                                s.as.URL,
		"authorization_endpoint":                s.as.URL + "/authorize",
		"token_endpoint":                        s.as.URL + "/token",
		"registration_endpoint":                 s.as.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token", "client_credentials", GrantJWTBearer},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": s.opts.AuthMethods,
	}
	if s.opts.ScopesSupported != nil {
		m["scopes_supported"] = s.opts.ScopesSupported
	}
	if s.opts.IssParameter {
		m["authorization_response_iss_parameter_supported"] = true
	}
	if s.opts.DPoP {
		m["dpop_signing_alg_values_supported"] = []string{"ES256"}
	}
	writeJSON(w, http.StatusOK, m)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	s.count("authorize")
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Host == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	_, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !known || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	user := r.Header.Get(UserHeader)
	if user == "" {
		user = s.opts.DefaultUser
	}
	code := random()
	s.mu.Lock()
	s.codes[code] = &grant{user: user, client: q.Get("client_id"), resource: q.Get("resource"),
		challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri"), scopes: s.grantable(q.Get("scope"))}
	s.mu.Unlock()
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	if s.opts.IssParameter {
		rq.Set("iss", s.as.URL)
	}
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// grantable is the requested scope minus the withheld ones.
func (s *Server) grantable(scope string) []string {
	return slices.DeleteFunc(strings.Fields(scope), func(x string) bool { return slices.Contains(s.opts.WithheldScopes, x) })
}

// clientAuth authenticates the client of a token request.
func (s *Server) clientAuth(r *http.Request) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, secret, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		want, known := s.clients[id]
		return id, known && want == secret && want != ""
	}
	id := r.PostForm.Get("client_id")
	want, known := s.clients[id]
	if !known {
		return id, false
	}
	return id, want == r.PostForm.Get("client_secret")
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	gt := r.PostForm.Get("grant_type")
	s.count("token")
	s.count("token:" + gt)
	var jkt string
	if s.opts.DPoP && r.Header.Get("DPoP") != "" {
		k, nonce, err := s.checkProof(r, "token", s.as.URL+"/token", "")
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_dpop_proof", "error_description": err.Error()})
			return
		}
		if s.opts.DPoPNonce && nonce != ASNonce {
			s.count("dpop:nonce-as")
			w.Header().Set("DPoP-Nonce", ASNonce)
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "use_dpop_nonce"})
			return
		}
		if !s.opts.DPoPUnbound {
			jkt = k
		}
	}
	workload, wif := "", false
	if gt == GrantJWTBearer {
		workload, wif = s.opts.Assertions[r.PostForm.Get("assertion")]
	}
	client, ok := s.clientAuth(r)
	// A workload without a client id is judged by its assertion alone.
	if !ok && !wif && (gt != GrantJWTBearer || client != "") {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var g *grant
	s.mu.Lock()
	switch gt {
	case "authorization_code":
		c := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if c == nil || c.client != client || c.redirectURI != r.PostForm.Get("redirect_uri") ||
			c.resource != r.PostForm.Get("resource") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			s.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = c
	case "refresh_token":
		old := s.refresh[r.PostForm.Get("refresh_token")]
		delete(s.refresh, r.PostForm.Get("refresh_token")) // rotation: one use
		// A DPoP-bound refresh token is renewed with its key only.
		if old == nil || old.client != client || old.jkt != jkt {
			s.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = old
	case GrantJWTBearer:
		if wif {
			g = &grant{user: workload, client: client, resource: r.PostForm.Get("resource"), scopes: s.grantable(r.PostForm.Get("scope"))}
			break
		}
		// The ID-JAG is single-use, for this server as audience, and
		// names the client that presents it.
		j := s.jags[r.PostForm.Get("assertion")]
		delete(s.jags, r.PostForm.Get("assertion"))
		if j == nil || j.client != client || (r.PostForm.Has("resource") && j.resource != r.PostForm.Get("resource")) {
			s.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		g = &grant{user: j.user, client: client, resource: j.resource, scopes: s.grantable(r.PostForm.Get("scope"))}
	case "client_credentials":
		g = &grant{user: "client:" + client, client: client, resource: r.PostForm.Get("resource"), scopes: s.grantable(r.PostForm.Get("scope"))}
	default:
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := random(), random()
	ng := *g
	ng.expiry = time.Now().Add(s.opts.TokenTTL)
	ng.jkt = jkt
	s.access[at] = &ng
	refreshable := gt == "authorization_code" || gt == "refresh_token"
	if refreshable {
		s.refresh[rt] = &ng
	}
	s.mu.Unlock()
	tokenType := "Bearer"
	if jkt != "" {
		tokenType = "DPoP"
	}
	out := map[string]any{"access_token": at, "token_type": tokenType, "expires_in": int(s.opts.TokenTTL / time.Second)}
	if refreshable {
		out["refresh_token"] = rt
	}
	if len(g.scopes) > 0 {
		out["scope"] = strings.Join(g.scopes, " ")
	}
	writeJSON(w, http.StatusOK, out)
}

// idpToken is the identity provider's token endpoint: an RFC 8693 token
// exchange of an ID token for an ID-JAG whose audience is this server's
// issuer, for the resource asked for, naming the authorization server's
// client that may present it (see asClientOf).
func (s *Server) idpToken(w http.ResponseWriter, r *http.Request) {
	s.count("idp")
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	idpClient, secret, basic := r.BasicAuth()
	if basic {
		idpClient, _ = url.QueryUnescape(idpClient)
		secret, _ = url.QueryUnescape(secret)
	} else {
		idpClient = r.PostForm.Get("client_id")
	}
	want, known := s.opts.IDPClients[idpClient]
	if !known || want != secret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != GrantTokenExchange {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if f.Get("requested_token_type") != TokenTypeIDJAG || f.Get("subject_token_type") != TokenTypeIDToken ||
		f.Get("audience") != s.as.URL || f.Get("resource") == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	user, ok := s.opts.IDTokens[f.Get("subject_token")]
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown ID token"})
		return
	}
	jag := random() + "." + random() + "." + random()
	s.mu.Lock()
	s.jags[jag] = &grant{user: user, client: s.asClientOf(idpClient), resource: f.Get("resource")}
	s.issued = append(s.issued, jag)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": jag, "issued_token_type": TokenTypeIDJAG, "token_type": "N_A", "expires_in": 300})
}

// asClientOf is the authorization server client an ID-JAG requested by an
// IdP client names: the IdP client id with "idp-" cut off when that is a
// registered client, else the id itself.
func (s *Server) asClientOf(idpClient string) string {
	if c, ok := strings.CutPrefix(idpClient, "idp-"); ok {
		if _, known := s.clients[c]; known {
			return c
		}
	}
	return idpClient
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	s.count("register")
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "dyn-" + random()[:12]
	secret := ""
	if req.AuthMethod != "" && req.AuthMethod != "none" {
		secret = random()
	}
	s.mu.Lock()
	s.clients[id] = secret
	s.mu.Unlock()
	out := map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs}
	if secret != "" {
		out["client_secret"] = secret
		out["token_endpoint_auth_method"] = req.AuthMethod
	}
	writeJSON(w, http.StatusCreated, out)
}

// Protect wraps an MCP handler served under resourceURL (the MCP endpoint
// URL clients use) so that every request needs a Bearer token of this
// server issued for that resource. It also serves the protected resource
// metadata at the path-based well-known URI (unless Options.NoPRM).
func (s *Server) Protect(resourceURL func() string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := resourceURL()
		u, _ := url.Parse(res)
		prmPath := "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
		if r.URL.Path == prmPath {
			if s.opts.NoPRM {
				http.NotFound(w, r)
				return
			}
			m := map[string]any{"resource": res, "authorization_servers": []string{s.as.URL}}
			if s.opts.ScopesSupported != nil {
				m["scopes_supported"] = s.opts.ScopesSupported
			}
			writeJSON(w, http.StatusOK, m)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			http.NotFound(w, r)
			return
		}
		scheme := "Bearer"
		if s.opts.DPoP {
			scheme = "DPoP"
		}
		challenge := fmt.Sprintf(`%s resource_metadata="%s://%s%s"`, scheme, u.Scheme, u.Host, prmPath)
		presented, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		s.mu.Lock()
		g := s.access[tok]
		s.mu.Unlock()
		// A DPoP-bound token is taken with the DPoP scheme only, a bearer
		// token with Bearer only (RFC 9449 §7.1).
		wantScheme := "Bearer"
		if g != nil && g.jkt != "" {
			wantScheme = "DPoP"
		}
		if g == nil || !strings.EqualFold(presented, wantScheme) || time.Now().After(g.expiry) || strings.TrimSuffix(g.resource, "/") != strings.TrimSuffix(res, "/") {
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if g.jkt != "" {
			jkt, nonce, err := s.checkProof(r, "resource", htuOf(r, res), tok)
			if err == nil && jkt != g.jkt {
				err = errors.New("the proof's key is not the token's")
			}
			if err != nil {
				w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_dpop_proof", error_description="`+err.Error()+`"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			if s.opts.DPoPNonce && nonce != RSNonce {
				s.count("dpop:nonce-rs")
				w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
				w.Header().Set("DPoP-Nonce", RSNonce)
				http.Error(w, "nonce required", http.StatusUnauthorized)
				return
			}
		}
		for _, need := range s.opts.RequiredScopes {
			if !slices.Contains(g.scopes, need) {
				w.Header().Set("WWW-Authenticate", challenge+fmt.Sprintf(`, error="insufficient_scope", scope="%s"`, strings.Join(s.opts.RequiredScopes, " ")))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 64<<10))
			rest := r.Body
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), rest), rest}
		}
		s.mu.Lock()
		s.uses = append(s.uses, Use{User: g.user, Claimed: r.Header.Get("X-Test-Subject"), Body: string(body)})
		s.mu.Unlock()
		r2 := r.Clone(r.Context())
		r2.Header.Set(UserHeader, g.user)
		next.ServeHTTP(w, r2)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
