package otelobs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/agenthost/agenthost/internal/httpredirect"
)

// defaultOTLPTimeout is the OTLP exporters' own default bound of one export.
const defaultOTLPTimeout = 10 * time.Second

// otlpHTTPClient is the client of an OTLP/HTTP exporter: the one redirect
// policy of every outgoing client (internal/httpredirect: within the
// endpoint's origin only, so observability.headers go nowhere else), with
// what the exporter would otherwise take from the environment for a client
// of its own: the timeout, the CA and the client certificate of
// OTEL_EXPORTER_OTLP_[SIGNAL_]{TIMEOUT,CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY}
// (the signal's variable before the general one), and the proxy of the
// standard variables. signal is "TRACES" or "METRICS".
func otlpHTTPClient(lookup func(string) (string, bool), signal string) (*http.Client, error) {
	get := func(name string) string {
		for _, key := range []string{"OTEL_EXPORTER_OTLP_" + signal + "_" + name, "OTEL_EXPORTER_OTLP_" + name} {
			if v, ok := lookup(key); ok && v != "" {
				return v
			}
		}
		return ""
	}
	timeout := defaultOTLPTimeout
	if v := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("observability: OTEL_EXPORTER_OTLP_%s_TIMEOUT or OTEL_EXPORTER_OTLP_TIMEOUT is not a number of milliseconds", signal)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = http.ProxyFromEnvironment
	if ca := get("CERTIFICATE"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("observability: the OTLP CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("observability: the OTLP CA certificate file holds no PEM certificate")
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cert, key := get("CLIENT_CERTIFICATE"), get("CLIENT_KEY"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("observability: the OTLP client certificate and key: %w", err)
		}
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.TLSClientConfig.Certificates = []tls.Certificate{pair}
	}
	c := httpredirect.NewClient(t, httpredirect.Policy{})
	c.Timeout = timeout
	return c, nil
}
