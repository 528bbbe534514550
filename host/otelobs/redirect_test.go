package otelobs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agenthost/agenthost/config"
)

// TestOTLPExportsFollowNoRedirectElsewhere: an OTLP/HTTP collector that
// answers 307 to another origin (another port) does not get agenthost to
// send its spans and metrics there with observability.headers: the
// exporters use the one redirect policy, as every other client does.
func TestOTLPExportsFollowNoRedirectElsewhere(t *testing.T) {
	const canary = "otlp-key-canary-7c1f"
	var elsewhere, asked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("X-Api-Key") == canary {
			t.Errorf("the collector's key reached another origin: %s", r.URL.Path)
		}
	}))
	t.Cleanup(other.Close)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(collector.Close)
	cfg := config.Observability{Enabled: true, Endpoint: collector.URL, Headers: map[string]string{"X-Api-Key": canary}}
	noEnv := func(string) (string, bool) { return "", false }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	spans, err := newTraceExporter(ctx, cfg, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	_, span := tp.Tracer("test").Start(ctx, "call")
	span.End()
	_ = tp.Shutdown(ctx)

	metrics, err := newMetricExporter(ctx, cfg, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{{
		Name: "calls",
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, DataPoints: []metricdata.DataPoint[int64]{{Value: 1}}},
	}}}}}
	if err := metrics.Export(ctx, rm); err == nil {
		t.Error("a metrics export redirected to another origin reported success")
	}
	_ = metrics.Shutdown(ctx)

	if asked.Load() < 2 {
		t.Fatalf("%d requests reached the collector, want the spans' and the metrics'", asked.Load())
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("%d exports followed the redirect to another origin", n)
	}
}

func TestOTLPHTTPClientFromEnvironment(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		timeout time.Duration
		wantErr bool
	}{
		{"default", nil, defaultOTLPTimeout, false},
		{"general", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}, 2500 * time.Millisecond, false},
		{"the signal's first", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "700"}, 700 * time.Millisecond, false},
		{"not a number", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, 0, true},
		{"no CA file", map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, 0, true},
		{"a key without its certificate", map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_KEY": "/nonexistent/key.pem"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := otlpHTTPClient(env(tc.env), "TRACES")
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Timeout != tc.timeout || c.CheckRedirect == nil {
				t.Errorf("timeout %v (want %v), redirect policy set %v", c.Timeout, tc.timeout, c.CheckRedirect != nil)
			}
		})
	}
}
