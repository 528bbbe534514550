package openaimodel_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/internal/httpredirect"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

const canaryAPIKey = "sk-CANARY-MODEL-4e2f"

// The model endpoint's redirects: within its origin they are followed
// with the API key; to another origin (another port of the same host,
// where Go's client would send even Authorization) they are refused, and
// that origin receives nothing, neither the key nor the prompt. A caller's
// HTTPClient (its Transport) gets the same policy.
func TestModelRedirects(t *testing.T) {
	for _, tt := range redirecttest.Cases {
		t.Run(tt.Name, func(t *testing.T) {
			answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			})
			other := redirecttest.New(t, answer)
			endpoint := redirecttest.New(t, nil)
			target := endpoint.URL
			if tt.Elsewhere {
				target = other.URL
			}
			endpoint.Handle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/moved/") {
					answer(w, r)
					return
				}
				http.Redirect(w, r, target+"/moved"+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			opts := openaimodel.Options{BaseURL: endpoint.URL + "/v1", APIKey: canaryAPIKey, MaxRetries: -1}
			if tt.CallerClient {
				opts.HTTPClient = &http.Client{Transport: http.DefaultTransport}
			}
			m := openaimodel.New(opts)
			var err error
			for _, e := range m.Generate(context.Background(), &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: "CANARY-PROMPT"}}}) {
				err = e
			}
			if n := len(other.Requests()); n != 0 {
				t.Fatalf("the other origin received %d requests (the API key seen: %t)", n, other.Saw(canaryAPIKey))
			}
			if !tt.Elsewhere {
				reqs := endpoint.Requests()
				if len(reqs) != 2 || reqs[1].Path != "/moved/v1/chat/completions" || reqs[1].Header.Get("Authorization") != "Bearer "+canaryAPIKey {
					t.Fatalf("the same-origin redirect was not followed with the key: %d requests", len(reqs))
				}
				return
			}
			if !errors.Is(err, httpredirect.ErrRefused) {
				t.Fatalf("err = %v, want a refused redirect", err)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("the error shows the key or the prompt: %v", err)
			}
		})
	}
}
