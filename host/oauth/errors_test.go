package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/oauth"
)

// An authorization server's error that quotes what the client sent (its
// refresh token, authorization code, verifier, client secret, HTTP Basic
// credentials) does not show it in agenthost's error.
func TestTokenErrorsHideWhatWasSent(t *testing.T) {
	const canaryRefresh = "CANARY-REFRESH-6b0e"
	as := fakeIssuer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad_" + f.Get("refresh_token"),
			"error_description": fmt.Sprintf("refused: %s %s %s %s", f.Get("refresh_token"), f.Get("client_secret"),
				r.Header.Get("Authorization"), url.QueryEscape(f.Get("refresh_token")+"/"))})
	}))
	res := protectedResource(t, func() string { return as.URL })
	for _, method := range []string{oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost} {
		t.Run(method, func(t *testing.T) {
			store := oauth.NewMemoryStore()
			c, err := oauth.NewClient(oauth.Config{ServerURL: res.URL + "/mcp", Store: store, ClientID: "cid", ClientSecret: canaryClientSecret,
				TokenEndpointAuthMethod: method})
			if err != nil {
				t.Fatal(err)
			}
			key := oauth.Key{Subject: "u", Resource: c.Resource(), Issuer: as.URL}
			must(t, store.Put(context.Background(), key, &oauth.Token{AccessToken: "CANARY-ACCESS-0", RefreshToken: canaryRefresh,
				Expiry: time.Now().Add(-time.Hour), ClientID: "cid", ClientSecret: canaryClientSecret, AuthMethod: method}))
			_, err = c.Token(context.Background(), "u")
			var ae *oauth.AuthorizationError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), "refused: ") {
				t.Fatalf("err = %v, want the server's error", err)
			}
			basic := (&http.Request{Header: http.Header{}})
			basic.SetBasicAuth("cid", canaryClientSecret)
			for _, v := range []string{"CANARY", strings.TrimPrefix(basic.Header.Get("Authorization"), "Basic ")} {
				if strings.Contains(err.Error(), v) {
					t.Fatalf("the error shows %q: %v", v, err)
				}
			}
			if !strings.Contains(err.Error(), "[redacted]") {
				t.Fatalf("nothing was redacted: %v", err)
			}
		})
	}
}
