package openaimodel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
)

type traceKey struct{}

func TestPropagateAddsHeadersFromTheRequestContext(t *testing.T) {
	tests := []struct {
		name      string
		propagate bool
		ctxValue  string
		want      string
	}{
		{name: "no Propagate: no header", ctxValue: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{name: "the context's trace context", propagate: true, ctxValue: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			want: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{name: "nothing in the context", propagate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = append(got, r.Header.Get("traceparent"))
				mu.Unlock()
				http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			}))
			defer srv.Close()
			opts := openaimodel.Options{BaseURL: srv.URL, APIKey: "sk-test", MaxRetries: -1}
			if tt.propagate {
				opts.Propagate = func(ctx context.Context, h http.Header) {
					if v, _ := ctx.Value(traceKey{}).(string); v != "" {
						h.Set("traceparent", v)
					}
				}
			}
			m := openaimodel.New(opts)
			ctx := context.WithValue(t.Context(), traceKey{}, tt.ctxValue)
			for _, err := range m.Generate(ctx, &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}) {
				if err == nil {
					t.Fatal("the 400 answer did not fail the request")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 {
				t.Fatal("the server got no request")
			}
			for _, h := range got {
				if h != tt.want {
					t.Errorf("traceparent %q, want %q", h, tt.want)
				}
			}
		})
	}
}
