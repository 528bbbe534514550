package oauthtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Browser returns a function that plays a person's browser for user: it
// GETs the authorization URL and follows the redirects (to the client's
// redirect URI), sending UserHeader on every request. It fails unless the
// last answer is 200.
func Browser(user string) func(ctx context.Context, authURL string) error {
	return func(ctx context.Context, authURL string) error {
		hc := &http.Client{Transport: &userTransport{user: user, base: http.DefaultTransport}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("browser: %s answered %d: %s", resp.Request.URL.Path, resp.StatusCode, body)
		}
		return nil
	}
}

type userTransport struct {
	user string
	base http.RoundTripper
}

func (t *userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(UserHeader, t.user)
	return t.base.RoundTrip(r)
}
