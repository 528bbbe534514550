package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestObservabilitySection(t *testing.T) {
	t.Setenv("AGENTHOST_TEST_OTLP_KEY", "key-from-env")
	tests := []struct {
		name    string
		yaml    string
		want    Observability
		wantErr []string // keys the error must name
	}{
		{name: "absent: off", yaml: "session: {trustLevel: 1}\n"},
		{
			name: "full, headers keep their case and expand",
			yaml: `observability:
  enabled: true
  endpoint: ${AGENTHOST_TEST_OTLP_EP:-http://127.0.0.1:4317}
  protocol: grpc
  headers: {X-Api-Key: "${AGENTHOST_TEST_OTLP_KEY}"}
  serviceName: checkout-agent
`,
			want: Observability{Enabled: true, Endpoint: "http://127.0.0.1:4317", Protocol: OTLPProtocolGRPC,
				Headers: map[string]string{"X-Api-Key": "key-from-env"}, ServiceName: "checkout-agent"},
		},
		{name: "unknown protocol", yaml: "observability: {protocol: thrift}\n", wantErr: []string{"observability.protocol"}},
		{name: "endpoint not http", yaml: "observability: {endpoint: \"udp://collector:4317\"}\n", wantErr: []string{"observability.endpoint"}},
		{name: "unknown key", yaml: "observability: {exporter: zipkin}\n", wantErr: []string{"observability.exporter"}},
		{name: "unset variable in headers", yaml: "observability: {headers: {K: \"${AGENTHOST_TEST_UNSET_9}\"}}\n", wantErr: []string{"observability.headers.K"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agenthost.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(path)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load: no error, want one naming %v", tt.wantErr)
				}
				for _, key := range tt.wantErr {
					if !strings.Contains(err.Error(), key) {
						t.Errorf("error %q does not name %s", err, key)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := cfg.Observability
			if got.Enabled != tt.want.Enabled || got.Endpoint != tt.want.Endpoint || got.Protocol != tt.want.Protocol ||
				got.ServiceName != tt.want.ServiceName || len(got.Headers) != len(tt.want.Headers) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for k, v := range tt.want.Headers {
				if got.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, got.Headers[k], v)
				}
			}
		})
	}
}
