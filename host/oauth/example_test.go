package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// A chat backend authorizes each end user separately: a request of a
// subject without a token fails with the URL to send that user to; the
// backend's redirect handler completes the login; the next request of that
// subject carries its own token.
func ExampleClient_Transport() {
	as := oauthtest.New(oauthtest.Options{}) // an authorization server for the example
	defer as.Close()
	var serverURL string
	mcp := httptest.NewServer(as.Protect(func() string { return serverURL }, http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello %s", r.Header.Get(oauthtest.UserHeader))
		})))
	defer mcp.Close()
	serverURL = mcp.URL + "/mcp"

	client, err := oauth.NewClient(oauth.Config{ServerURL: serverURL, Store: oauth.NewMemoryStore()})
	if err != nil {
		panic(err)
	}
	callback := httptest.NewServer(client.CallbackHandler(nil)) // the backend mounts this
	defer callback.Close()
	hc := &http.Client{Transport: client.Transport(nil, oauth.TransportOptions{RedirectURI: callback.URL + "/oauth/callback"})}

	call := func(subject string) (string, error) {
		ctx := oauth.WithSubject(context.Background(), subject)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, serverURL, nil)
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body), nil
	}

	_, err = call("alice")
	var need *oauth.AuthorizationRequiredError
	if errors.As(err, &need) {
		fmt.Println("alice must authorize:", need.AuthURL != "")
		// The backend sends alice's browser to need.AuthURL; here the test
		// browser follows it back to the callback.
		if err := oauthtest.Browser("alice")(context.Background(), need.AuthURL); err != nil {
			panic(err)
		}
	}
	answer, err := call("alice")
	fmt.Println(answer, err)
	_, err = call("bob") // bob has no token of his own
	fmt.Println("bob:", errors.Is(err, oauth.ErrAuthorizationRequired))
	// Output:
	// alice must authorize: true
	// hello alice <nil>
	// bob: true
}
