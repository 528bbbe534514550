package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// claimTransport tells the resource which subject a request was meant for,
// so the server can check the token it carries.
type claimTransport struct{ base http.RoundTripper }

func (c claimTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	subject, _ := oauth.SubjectFrom(r.Context())
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Subject", subject)
	return c.base.RoundTrip(r)
}

// 100 subjects log in at once through one Client (one shared transport, the
// library's redirect handler), then call concurrently: the resource sees
// every request carry a token issued to the subject it was made for.
func TestHundredSubjectsIsolation(t *testing.T) {
	const subjects, callsEach = 100, 5
	r := newResource(t, oauthtest.Options{})
	c, err := oauth.NewClient(oauth.Config{ServerURL: r.url})
	if err != nil {
		t.Fatal(err)
	}
	var doneMu sync.Mutex
	completed := map[string]int{}
	cb := httptest.NewServer(c.CallbackHandler(func(subject string, err error) {
		doneMu.Lock()
		defer doneMu.Unlock()
		if err == nil {
			completed[subject]++
		}
	}))
	defer cb.Close()
	rt := c.Transport(claimTransport{http.DefaultTransport}, oauth.TransportOptions{RedirectURI: cb.URL + "/oauth/callback"})

	var wg sync.WaitGroup
	errs := make(chan error, subjects*callsEach)
	for i := range subjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprintf("user-%03d", i)
			ctx := oauth.WithSubject(context.Background(), subject)
			_, err := get(ctx, rt, r.url)
			var are *oauth.AuthorizationRequiredError
			if !errors.As(err, &are) || are.Subject != subject || are.AuthURL == "" {
				errs <- fmt.Errorf("%s: first call: %v", subject, err)
				return
			}
			if err := oauthtest.Browser(subject)(ctx, are.AuthURL); err != nil {
				errs <- fmt.Errorf("%s: browser: %v", subject, err)
				return
			}
			for range callsEach {
				got, err := get(ctx, rt, r.url)
				if err != nil || got != "user="+subject {
					errs <- fmt.Errorf("%s: call = %q, %v", subject, got, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	uses := r.as.Uses()
	if len(uses) != subjects*callsEach {
		t.Errorf("the resource accepted %d requests, want %d", len(uses), subjects*callsEach)
	}
	for _, u := range uses {
		if u.User != u.Claimed {
			t.Errorf("cross-subject token use: a request for %q carried %q's token", u.Claimed, u.User)
		}
	}
	if len(completed) != subjects {
		t.Errorf("%d subjects completed a login, want %d", len(completed), subjects)
	}
}
