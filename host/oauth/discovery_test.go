package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
)

// fakeAS is a scriptable authorization server and resource on one origin:
// docs maps paths to JSON bodies (with {{.}} replaced by the origin); the
// token endpoint records its forms; /mcp wants the token "good".
type fakeAS struct {
	srv   *httptest.Server
	docs  map[string]string
	mu    sync.Mutex
	paths []string
	forms []url.Values
	auths []string
}

func newFakeAS(t *testing.T, docs map[string]string) *fakeAS {
	f := &fakeAS{docs: docs}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		switch r.URL.Path {
		case "/mcp":
			if r.Header.Get("Authorization") == "Bearer good" {
				fmt.Fprint(w, "ok")
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer scope="s1"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		case "/token", "/tenant/token":
			_ = r.ParseForm()
			f.mu.Lock()
			f.forms = append(f.forms, r.PostForm)
			f.auths = append(f.auths, r.Header.Get("Authorization"))
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"good","token_type":"bearer","expires_in":"3600"}`)
			return
		}
		doc, ok := f.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, strings.ReplaceAll(doc, "{{.}}", f.srv.URL))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

const asDoc = `{"issuer":"{{.}}/tenant","authorization_endpoint":"{{.}}/tenant/authorize","token_endpoint":"{{.}}/tenant/token",
 "code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["client_secret_post"]}`

func TestDiscovery(t *testing.T) {
	tests := []struct {
		name     string
		docs     map[string]string
		wantErr  string
		wantSeen []string // metadata paths fetched, in order
	}{
		{"path-based PRM, issuer with path via RFC 8414", map[string]string{
			"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
			"/.well-known/oauth-authorization-server/tenant": asDoc,
		}, "", []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server/tenant"}},
		{"root PRM, OpenID discovery", map[string]string{
			"/.well-known/oauth-protected-resource":    `{"resource":"{{.}}","authorization_servers":["{{.}}/tenant"]}`,
			"/tenant/.well-known/openid-configuration": asDoc,
		}, "", []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
			"/.well-known/oauth-authorization-server/tenant", "/.well-known/openid-configuration/tenant", "/tenant/.well-known/openid-configuration"}},
		{"PRM for another resource", map[string]string{
			"/.well-known/oauth-protected-resource/mcp": `{"resource":"{{.}}/other","authorization_servers":["{{.}}/tenant"]}`,
		}, "names resource", nil},
		{"issuer mismatch", map[string]string{
			"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
			"/.well-known/oauth-authorization-server/tenant": strings.Replace(asDoc, `"{{.}}/tenant"`, `"https://evil.example.com"`, 1),
		}, "names issuer", nil},
		{"no PKCE", map[string]string{
			"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
			"/.well-known/oauth-authorization-server/tenant": strings.Replace(asDoc, `"S256"`, `"plain"`, 1),
		}, "PKCE", nil},
		{"2025-03-26 fallback: metadata at the origin", map[string]string{
			"/.well-known/oauth-authorization-server": strings.ReplaceAll(asDoc, "/tenant", ""),
		}, "", []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"}},
		{"2025-03-26 fallback: default endpoints", map[string]string{}, "",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAS(t, tt.docs)
			c, err := oauth.NewClient(oauth.Config{ServerURL: f.srv.URL + "/mcp", ClientID: "cid", ClientSecret: "sec"})
			if err != nil {
				t.Fatal(err)
			}
			authURL, _, err := c.StartAuthorization(context.Background(), oauth.AuthRequest{Subject: "s", RedirectURI: "http://127.0.0.1:1/cb"})
			checkErrT(t, err, tt.wantErr)
			if err != nil {
				return
			}
			if diff := strings.Join(tt.wantSeen, " "); strings.Join(f.seen(), " ") != diff {
				t.Errorf("fetched %v, want %v", f.seen(), tt.wantSeen)
			}
			u, _ := url.Parse(authURL)
			q := u.Query()
			if q.Get("resource") == "" || q.Get("client_id") != "cid" || q.Get("code_challenge_method") != "S256" || len(q.Get("state")) < 40 {
				t.Errorf("authorization URL %s", authURL)
			}
		})
	}
}

func checkErrT(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
}

// The redirect's iss must name the issuer (RFC 9207); a state that matches
// no authorization is refused; each state is good for one use.
func TestCompleteAuthorizationChecks(t *testing.T) {
	docs := map[string]string{
		"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
		"/.well-known/oauth-authorization-server/tenant": strings.Replace(asDoc, `"S256"]`, `"S256"],"authorization_response_iss_parameter_supported":true`, 1),
	}
	tests := []struct {
		name    string
		query   func(state, origin string) url.Values
		wantErr string
	}{
		{"good", func(s, o string) url.Values { return url.Values{"state": {s}, "code": {"c"}, "iss": {o + "/tenant"}} }, ""},
		{"wrong iss", func(s, o string) url.Values {
			return url.Values{"state": {s}, "code": {"c"}, "iss": {"https://evil.example.com"}}
		}, "RFC 9207"},
		{"missing iss the server promised", func(s, o string) url.Values { return url.Values{"state": {s}, "code": {"c"}} }, "no iss"},
		{"unknown state", func(s, o string) url.Values { return url.Values{"state": {"x"}, "code": {"c"}} }, "state"},
		{"error answer", func(s, o string) url.Values {
			return url.Values{"state": {s}, "error": {"access_denied"}, "error_description": {"no\x1b[31m"}}
		}, "access_denied: no[31m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAS(t, docs)
			c, _ := oauth.NewClient(oauth.Config{ServerURL: f.srv.URL + "/mcp", ClientID: "cid", ClientSecret: "sec"})
			_, state, err := c.StartAuthorization(context.Background(), oauth.AuthRequest{Subject: "s", RedirectURI: "http://127.0.0.1:1/cb"})
			if err != nil {
				t.Fatal(err)
			}
			q := tt.query(state, f.srv.URL)
			_, err = c.CompleteAuthorization(context.Background(), q)
			checkErrT(t, err, tt.wantErr)
			if err != nil {
				return
			}
			form := f.forms[0]
			if form.Get("code_verifier") == "" || form.Get("resource") != f.srv.URL+"/mcp" || form.Get("client_secret") != "sec" {
				t.Errorf("token request %v", form)
			}
			if _, err := c.CompleteAuthorization(context.Background(), q); err == nil {
				t.Error("a state was accepted twice")
			}
		})
	}
}

func TestClientCredentials(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	signer, err := oauth.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
		"/.well-known/oauth-authorization-server/tenant": strings.Replace(asDoc, `["client_secret_post"]`, `["client_secret_basic","private_key_jwt"]`, 1),
	}
	tests := []struct {
		name  string
		cfg   oauth.Config
		check func(t *testing.T, form url.Values, auth, issuer string)
	}{
		{"basic", oauth.Config{ClientID: "m2m", ClientSecret: "s:ec"}, func(t *testing.T, form url.Values, auth, _ string) {
			if auth != "Basic "+base64.StdEncoding.EncodeToString([]byte("m2m:s%3Aec")) || form.Get("client_secret") != "" {
				t.Errorf("auth %q form %v", auth, form)
			}
		}},
		{"post", oauth.Config{ClientID: "m2m", ClientSecret: "sec", TokenEndpointAuthMethod: oauth.AuthClientSecretPost}, func(t *testing.T, form url.Values, auth, _ string) {
			if auth != "" || form.Get("client_secret") != "sec" || form.Get("client_id") != "m2m" {
				t.Errorf("auth %q form %v", auth, form)
			}
		}},
		{"private_key_jwt", oauth.Config{ClientID: "m2m", PrivateKey: signer}, func(t *testing.T, form url.Values, auth, issuer string) {
			if auth != "" || form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
				t.Fatalf("auth %q form %v", auth, form)
			}
			verifyES256(t, form.Get("client_assertion"), &key.PublicKey, "m2m", issuer)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAS(t, docs)
			cfg := tt.cfg
			cfg.ServerURL = f.srv.URL + "/mcp"
			cfg.Grant = oauth.GrantClientCredentials
			c, err := oauth.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := get(context.Background(), c.Transport(nil, oauth.TransportOptions{}), f.srv.URL+"/mcp")
			if err != nil || got != "ok" {
				t.Fatalf("request = %q, %v", got, err)
			}
			if len(f.forms) != 1 || f.forms[0].Get("grant_type") != "client_credentials" || f.forms[0].Get("resource") != f.srv.URL+"/mcp" {
				t.Fatalf("token requests %v", f.forms)
			}
			tt.check(t, f.forms[0], f.auths[0], f.srv.URL+"/tenant")
		})
	}
}

func verifyES256(t *testing.T, jwt string, pub *ecdsa.PublicKey, clientID, aud string) {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q", jwt)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the client assertion's signature does not verify")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(raw, &claims)
	if claims["iss"] != clientID || claims["sub"] != clientID || claims["aud"] != aud || claims["jti"] == "" || claims["exp"] == nil {
		t.Fatalf("claims %v", claims)
	}
}

func TestClientMetadataDocument(t *testing.T) {
	docs := map[string]string{
		"/.well-known/oauth-protected-resource/mcp":      `{"resource":"{{.}}/mcp","authorization_servers":["{{.}}/tenant"]}`,
		"/.well-known/oauth-authorization-server/tenant": strings.Replace(asDoc, `"S256"]`, `"S256"],"client_id_metadata_document_supported":true`, 1),
	}
	f := newFakeAS(t, docs)
	c, _ := oauth.NewClient(oauth.Config{ServerURL: f.srv.URL + "/mcp", ClientMetadataURL: "https://client.example.com/agenthost.json"})
	authURL, _, err := c.StartAuthorization(context.Background(), oauth.AuthRequest{RedirectURI: "http://127.0.0.1:1/cb"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	if u.Query().Get("client_id") != "https://client.example.com/agenthost.json" {
		t.Fatalf("client_id in %s", authURL)
	}
	// Without registration endpoint nor pre-registration nor CIMD support: ErrNoClient.
	delete(docs, "/.well-known/oauth-authorization-server/tenant")
	docs["/.well-known/oauth-authorization-server/tenant"] = asDoc
	f2 := newFakeAS(t, docs)
	c2, _ := oauth.NewClient(oauth.Config{ServerURL: f2.srv.URL + "/mcp", ClientMetadataURL: "https://client.example.com/agenthost.json"})
	if _, _, err := c2.StartAuthorization(context.Background(), oauth.AuthRequest{RedirectURI: "http://127.0.0.1:1/cb"}); err == nil || !strings.Contains(err.Error(), "configure a client id") {
		t.Fatalf("err = %v", err)
	}
}
