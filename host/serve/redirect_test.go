package serve

import (
	"net/http"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

// A webhook receiver that redirects to another origin (another port of
// the same host) does not get the delivery sent there: the payload and its
// valid signature reach the configured origin only, and the refused
// redirect ends the delivery (asking again gets the same answer). Within
// the receiver's origin the redirect is followed. The same holds with a
// caller's Options.HTTPClient.
func TestWebhookRedirects(t *testing.T) {
	const secret = "CANARY-HOOK-SECRET-90af"
	for _, tt := range redirecttest.Cases {
		t.Run(tt.Name, func(t *testing.T) {
			other := redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			receiver := redirecttest.New(t, nil)
			target := receiver.URL
			if tt.Elsewhere {
				target = other.URL
			}
			receiver.Handle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/moved" {
					w.WriteHeader(http.StatusNoContent)
					return
				}
				http.Redirect(w, r, target+"/moved", http.StatusTemporaryRedirect)
			}))
			hook := config.Webhook{URL: receiver.URL + "/hook", Secret: secret, MaxAttempts: 3, Timeout: 5 * time.Second}
			f := newFixture(t, nil)
			opts := Options{Host: f.h, Config: config.Serve{Webhooks: []config.Webhook{hook}}, Logger: discardLogger(), hookBackoff: time.Millisecond}
			if tt.CallerClient {
				opts.HTTPClient = &http.Client{}
			}
			srv, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			srv.hooks.DeliverNow(t.Context(), 0, "apr_1", []byte(`{"type":"approval.pending","approval":{"id":"CANARY-PAYLOAD"}}`))
			if n := len(other.Requests()); n != 0 {
				t.Fatalf("the other origin received %d deliveries (payload seen: %t)", n, other.Saw("CANARY-PAYLOAD"))
			}
			got := receiver.Requests()
			if tt.Elsewhere {
				if len(got) != 1 {
					t.Fatalf("the receiver got %d attempts, want 1 (a refused redirect is not retried)", len(got))
				}
				return
			}
			if len(got) != 2 || got[1].Path != "/moved" || got[1].Header.Get(HeaderWebhookSignature) == "" {
				t.Fatalf("the same-origin redirect was not followed with the signature: %d requests", len(got))
			}
		})
	}
}
