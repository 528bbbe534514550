package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// checkProofs checks what a DPoP flow's proofs say: one key for all of
// them, a distinct jti each, ath on resource requests only (the hash of
// the token presented), the servers' nonces where they asked for them.
func checkProofs(t *testing.T, r *resource, proofs []oauthtest.Proof, nonce bool) {
	t.Helper()
	if len(proofs) == 0 {
		t.Fatal("no DPoP proof reached the servers")
	}
	jtis := map[any]bool{}
	for i, p := range proofs {
		if jtis[p.Claims["jti"]] {
			t.Errorf("proof %d reuses jti %v", i, p.Claims["jti"])
		}
		jtis[p.Claims["jti"]] = true
		if p.JKT != proofs[0].JKT {
			t.Errorf("proof %d is signed with another key", i)
		}
		if _, ok := p.Header["jwk"].(map[string]any)["d"]; ok {
			t.Errorf("proof %d carries the private key", i)
		}
		switch p.Where {
		case "token":
			if _, ok := p.Claims["ath"]; ok {
				t.Errorf("token request proof %d has ath", i)
			}
			if p.Claims["htu"] != r.as.URL()+"/token" || p.Claims["htm"] != "POST" {
				t.Errorf("token request proof %d names %v %v", i, p.Claims["htm"], p.Claims["htu"])
			}
		case "resource":
			if ath, _ := p.Claims["ath"].(string); len(ath) != 43 {
				t.Errorf("resource proof %d has ath %q", i, ath)
			}
			if p.Claims["htu"] != r.url {
				t.Errorf("resource proof %d names %v, not %s", i, p.Claims["htu"], r.url)
			}
		}
	}
	if nonce {
		var as, rs bool
		for _, p := range proofs {
			as = as || (p.Where == "token" && p.Claims["nonce"] == oauthtest.ASNonce)
			rs = rs || (p.Where == "resource" && p.Claims["nonce"] == oauthtest.RSNonce)
		}
		if !as || !rs {
			t.Errorf("no proof with the authorization server's nonce (%t) or the resource's (%t)", as, rs)
		}
	}
	if n := r.as.Requests("dpop:replay"); n != 0 {
		t.Errorf("%d proofs were replayed", n)
	}
}

func TestDPoPGrants(t *testing.T) {
	const wif = "aaaa.bbbb.cccc"
	for _, nonce := range []bool{false, true} {
		for _, grant := range []oauth.Grant{oauth.GrantAuthorizationCode, oauth.GrantClientCredentials, oauth.GrantJWTBearer} {
			t.Run(fmt.Sprintf("%s nonce=%t", grant, nonce), func(t *testing.T) {
				r := newResource(t, oauthtest.Options{DPoP: true, DPoPNonce: nonce,
					Clients: map[string]string{"m2m": "sec"}, Assertions: map[string]string{wif: "workload"}})
				cfg := oauth.Config{ServerURL: r.url, Grant: grant}
				switch grant {
				case oauth.GrantClientCredentials:
					cfg.ClientID, cfg.ClientSecret = "m2m", "sec"
				case oauth.GrantJWTBearer:
					cfg.Assertion = func(context.Context) (string, error) { return wif, nil }
				}
				c, err := oauth.NewClient(cfg)
				if err != nil {
					t.Fatal(err)
				}
				rt := c.Transport(nil, oauth.TransportOptions{Subject: "alice", Authorize: loginHook(c, "alice", nil)})
				for i := range 3 {
					if _, err := get(context.Background(), rt, r.url); err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
				}
				tok, _, err := c.Store().Get(context.Background(), oauth.Key{Subject: "alice", Resource: c.Resource()})
				if err != nil || tok.DPoPKey == nil {
					t.Fatalf("stored token %v, %v: want one bound to a DPoP key", tok, err)
				}
				checkProofs(t, r, r.as.Proofs(), nonce)
				wantNonces := 0
				if nonce {
					wantNonces = 1
				}
				if as, rs := r.as.Requests("dpop:nonce-as"), r.as.Requests("dpop:nonce-rs"); as != wantNonces || rs != wantNonces {
					t.Errorf("nonce challenges: authorization server %d, resource %d; want %d each", as, rs, wantNonces)
				}
			})
		}
	}
}

// A DPoP-bound refresh token is renewed with the key it is bound to (the
// test server refuses another key), and the key comes from the token file
// in a later process.
func TestDPoPKeyKeptWithTheToken(t *testing.T) {
	r := newResource(t, oauthtest.Options{DPoP: true})
	path := filepath.Join(t.TempDir(), "tokens.json")
	newClient := func() *oauth.Client {
		c, err := oauth.NewClient(oauth.Config{ServerURL: r.url, Store: oauth.NewFileStore(path)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := newClient()
	var logins atomic.Int32
	if _, err := get(context.Background(), c.Transport(nil, oauth.TransportOptions{Subject: "alice", Authorize: loginHook(c, "alice", &logins)}), r.url); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"dpop_key"`) {
		t.Fatalf("the token file keeps no DPoP key")
	}
	// Another process: the stored token and key are used as they are,
	// then the refresh token with the same key.
	r.as.Revoke("alice")
	c2 := newClient()
	if _, err := get(context.Background(), c2.Transport(nil, oauth.TransportOptions{Subject: "alice", Authorize: loginHook(c2, "alice", &logins)}), r.url); err != nil {
		t.Fatal(err)
	}
	if logins.Load() != 1 || r.as.Requests("token:refresh_token") != 1 {
		t.Errorf("logins %d, refreshes %d: want the refresh with the stored key, no second login", logins.Load(), r.as.Requests("token:refresh_token"))
	}
	checkProofs(t, r, r.as.Proofs(), false)
	// Another subject gets a key of its own.
	if _, err := get(context.Background(), c2.Transport(nil, oauth.TransportOptions{Subject: "bob", Authorize: loginHook(c2, "bob", nil)}), r.url); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, p := range r.as.Proofs() {
		keys[p.JKT] = true
	}
	if len(keys) != 2 {
		t.Errorf("%d DPoP keys for two subjects", len(keys))
	}
}

func TestDPoPModes(t *testing.T) {
	tests := []struct {
		name          string
		dpop, unbound bool // the servers support DPoP; the token endpoint issues bearer tokens anyway
		mode          oauth.DPoPMode
		proofs, bound bool
		wantErr       error
	}{
		{"auto, DPoP server", true, false, oauth.DPoPAuto, true, true, nil},
		{"default, DPoP server", true, false, "", true, true, nil},
		{"auto, bearer server", false, false, oauth.DPoPAuto, false, false, nil},
		{"auto, server issuing bearer tokens to a proof", true, true, oauth.DPoPAuto, true, false, nil},
		{"off, DPoP server", true, false, oauth.DPoPOff, false, false, nil},
		{"required, DPoP server", true, false, oauth.DPoPRequired, true, true, nil},
		{"required, bearer server", false, false, oauth.DPoPRequired, false, false, oauth.ErrDPoPUnsupported},
		{"required, server issuing bearer tokens to a proof", true, true, oauth.DPoPRequired, true, false, oauth.ErrDPoPUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResource(t, oauthtest.Options{DPoP: tt.dpop, DPoPUnbound: tt.unbound, Clients: map[string]string{"m2m": "sec"}})
			c, err := oauth.NewClient(oauth.Config{ServerURL: r.url, Grant: oauth.GrantClientCredentials, ClientID: "m2m", ClientSecret: "sec", DPoP: tt.mode})
			if err != nil {
				t.Fatal(err)
			}
			_, err = get(context.Background(), c.Transport(nil, oauth.TransportOptions{Subject: "s"}), r.url)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("request: %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			tok, _, err := c.Store().Get(context.Background(), oauth.Key{Subject: "s", Resource: c.Resource()})
			if err != nil || (tok.DPoPKey != nil) != tt.bound {
				t.Fatalf("stored %v, %v; want bound %t", tok, err, tt.bound)
			}
			if got := len(r.as.Proofs()) > 0; got != tt.proofs {
				t.Errorf("proofs sent %t, want %t", got, tt.proofs)
			}
		})
	}
	if _, err := oauth.NewClient(oauth.Config{ServerURL: "http://127.0.0.1:1/mcp", DPoP: "always"}); err == nil {
		t.Error("an unknown dpop mode was accepted")
	}
}

// The test server's replay detection works (so the flows above, which
// find no replay, could have found one): the same proof twice is refused.
func TestDPoPReplayRefused(t *testing.T) {
	r := newResource(t, oauthtest.Options{DPoP: true, Clients: map[string]string{"m2m": "sec"}})
	var proof, token string
	capture := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		proof, token = req.Header.Get("DPoP"), req.Header.Get("Authorization")
		return http.DefaultTransport.RoundTrip(req)
	})
	c, err := oauth.NewClient(oauth.Config{ServerURL: r.url, Grant: oauth.GrantClientCredentials, ClientID: "m2m", ClientSecret: "sec"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(context.Background(), c.Transport(capture, oauth.TransportOptions{}), r.url); err != nil {
		t.Fatal(err)
	}
	replay := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		req.Header.Set("DPoP", proof)
		req.Header.Set("Authorization", token)
		return http.DefaultTransport.RoundTrip(req)
	})
	if _, err := get(context.Background(), replay, r.url); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a replayed proof: %v, want 401", err)
	}
	if r.as.Requests("dpop:replay") != 1 {
		t.Errorf("replays counted %d, want 1", r.as.Requests("dpop:replay"))
	}
	sum := sha256.Sum256([]byte(strings.TrimPrefix(token, "DPoP ")))
	if !strings.HasPrefix(token, "DPoP ") || r.as.Proofs()[1].Claims["ath"] != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Errorf("token presented as %q; the resource proof's ath does not hash it", strings.SplitN(token, " ", 2)[0])
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
