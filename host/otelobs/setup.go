package otelobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// ErrUnsupportedProtocol is returned for an OTLP protocol other than
// http/protobuf and grpc.
var ErrUnsupportedProtocol = errors.New("unsupported OTLP protocol")

// SetupOptions tune Setup.
type SetupOptions struct {
	// ServiceVersion is service.version.
	ServiceVersion string
	// LookupEnv replaces os.LookupEnv (tests); the exporters themselves
	// still read the process environment for the OTEL_EXPORTER_OTLP_*
	// settings the config does not give.
	LookupEnv func(string) (string, bool)
	// Logger, when set, receives the SDK's errors (a failed export, say)
	// as warnings, in place of OpenTelemetry's global handler, which
	// prints them to stderr. It sets that global handler.
	Logger *slog.Logger
	Options
}

// Telemetry is an SDK set up by Setup: its Observer, and Shutdown, which
// flushes what is buffered and stops the exporters.
type Telemetry struct {
	Observer *Observer
	shutdown []func(context.Context) error
}

// Shutdown flushes the spans and metrics still buffered and stops the
// exporters; call it before the program exits. Safe on a nil Telemetry.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// Enabled reports whether telemetry is on: the config section says
// enabled, or an OTLP endpoint variable (OTEL_EXPORTER_OTLP_ENDPOINT, or
// its _TRACES_ or _METRICS_ form) is set; OTEL_SDK_DISABLED=true turns it
// off either way.
func Enabled(cfg config.Observability, lookupEnv func(string) (string, bool)) bool {
	return cfg.On(lookupEnv)
}

// Setup builds the OTel SDK (a tracer provider with a batching OTLP span
// exporter, a meter provider with a periodic OTLP metric reader) from the
// config section and the OTEL_* environment, and returns its Observer. It
// returns nil, nil when telemetry is off (see Enabled): nothing is set up.
//
// Honoured variables: OTEL_SDK_DISABLED, OTEL_EXPORTER_OTLP_ENDPOINT (and
// _TRACES_/_METRICS_ forms), OTEL_EXPORTER_OTLP_PROTOCOL (and the per-signal
// forms), OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, _INSECURE,
// _CERTIFICATE (read by the exporters), OTEL_TRACES_EXPORTER and
// OTEL_METRICS_EXPORTER (otlp or none), OTEL_TRACES_SAMPLER and _ARG,
// OTEL_METRIC_EXPORT_INTERVAL, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES.
// The config's endpoint, protocol and headers win over the variables.
func Setup(ctx context.Context, cfg config.Observability, opts SetupOptions) (*Telemetry, error) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if !Enabled(cfg, lookup) {
		return nil, nil
	}
	if l := opts.Logger; l != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			l.Warn("telemetry: export failed", "err", err)
		}))
	}
	res, err := newResource(ctx, cfg, opts.ServiceVersion)
	if err != nil {
		return nil, fmt.Errorf("observability: resource: %w", err)
	}
	t := &Telemetry{}
	var tp trace.TracerProvider = tracenoop.NewTracerProvider()
	if exporterOn(lookup, "OTEL_TRACES_EXPORTER") {
		exp, err := newTraceExporter(ctx, cfg, lookup)
		if err != nil {
			return nil, err
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		t.shutdown = append(t.shutdown, sdk.Shutdown)
		tp = sdk
	}
	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	if exporterOn(lookup, "OTEL_METRICS_EXPORTER") {
		exp, err := newMetricExporter(ctx, cfg, lookup)
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, err
		}
		sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		t.shutdown = append(t.shutdown, sdk.Shutdown)
		mp = sdk
	}
	t.Observer, err = New(tp, mp, opts.Options)
	if err != nil {
		_ = t.Shutdown(ctx)
		return nil, fmt.Errorf("observability: %w", err)
	}
	return t, nil
}

// exporterOn reads OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER: "none"
// turns the signal off; anything else (otlp, the default) leaves it on.
func exporterOn(lookup func(string) (string, bool), name string) bool {
	v, _ := lookup(name)
	return !strings.EqualFold(strings.TrimSpace(v), "none")
}

// newResource is service.name (config, else OTEL_SERVICE_NAME, else
// agenthost), service.version, the SDK's own attributes and
// OTEL_RESOURCE_ATTRIBUTES; no process or host detectors (a command line
// may hold --bind values).
func newResource(ctx context.Context, cfg config.Observability, version string) (*resource.Resource, error) {
	opts := []resource.Option{
		resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(defaultAgentName)),
	}
	if version != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(version)))
	}
	opts = append(opts, resource.WithFromEnv())
	if cfg.ServiceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)))
	}
	return resource.New(ctx, opts...)
}

// protocol is the OTLP protocol of a signal: the config's, else
// OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf.
func protocol(cfg config.Observability, lookup func(string) (string, bool), signal string) (string, error) {
	p := cfg.Protocol
	if p == "" {
		if v, ok := lookup("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"); ok && v != "" {
			p = v
		} else if v, ok := lookup("OTEL_EXPORTER_OTLP_PROTOCOL"); ok && v != "" {
			p = v
		}
	}
	switch p = strings.TrimSpace(p); p {
	case "", config.OTLPProtocolHTTP:
		return config.OTLPProtocolHTTP, nil
	case config.OTLPProtocolGRPC:
		return p, nil
	}
	return "", fmt.Errorf("observability: %w %q (use %s or %s)", ErrUnsupportedProtocol, p, config.OTLPProtocolHTTP, config.OTLPProtocolGRPC)
}

// endpoint splits the config's endpoint (a base URL, like
// OTEL_EXPORTER_OTLP_ENDPOINT) into host:port, path and whether it is
// plain http.
func endpoint(raw string) (hostport, path string, insecure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", false, errors.New("observability.endpoint: must be an absolute http:// or https:// URL")
	}
	return u.Host, strings.TrimRight(u.Path, "/"), u.Scheme == "http", nil
}

func newTraceExporter(ctx context.Context, cfg config.Observability, lookup func(string) (string, bool)) (sdktrace.SpanExporter, error) {
	proto, err := protocol(cfg, lookup, "TRACES")
	if err != nil {
		return nil, err
	}
	if proto == config.OTLPProtocolGRPC {
		var opts []otlptracegrpc.Option
		if cfg.Endpoint != "" {
			hp, _, insecure, err := endpoint(cfg.Endpoint)
			if err != nil {
				return nil, err
			}
			opts = append(opts, otlptracegrpc.WithEndpoint(hp))
			if insecure {
				opts = append(opts, otlptracegrpc.WithInsecure())
			}
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("observability: OTLP/gRPC trace exporter: %w", err)
		}
		return exp, nil
	}
	hc, err := otlpHTTPClient(lookup, "TRACES")
	if err != nil {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithHTTPClient(hc)}
	if cfg.Endpoint != "" {
		hp, path, insecure, err := endpoint(cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlptracehttp.WithEndpoint(hp), otlptracehttp.WithURLPath(path+"/v1/traces"))
		if insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
	}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("observability: OTLP/HTTP trace exporter: %w", err)
	}
	return exp, nil
}

func newMetricExporter(ctx context.Context, cfg config.Observability, lookup func(string) (string, bool)) (sdkmetric.Exporter, error) {
	proto, err := protocol(cfg, lookup, "METRICS")
	if err != nil {
		return nil, err
	}
	if proto == config.OTLPProtocolGRPC {
		var opts []otlpmetricgrpc.Option
		if cfg.Endpoint != "" {
			hp, _, insecure, err := endpoint(cfg.Endpoint)
			if err != nil {
				return nil, err
			}
			opts = append(opts, otlpmetricgrpc.WithEndpoint(hp))
			if insecure {
				opts = append(opts, otlpmetricgrpc.WithInsecure())
			}
		}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlpmetricgrpc.WithHeaders(cfg.Headers))
		}
		exp, err := otlpmetricgrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("observability: OTLP/gRPC metric exporter: %w", err)
		}
		return exp, nil
	}
	hc, err := otlpHTTPClient(lookup, "METRICS")
	if err != nil {
		return nil, err
	}
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithHTTPClient(hc)}
	if cfg.Endpoint != "" {
		hp, path, insecure, err := endpoint(cfg.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlpmetrichttp.WithEndpoint(hp), otlpmetrichttp.WithURLPath(path+"/v1/metrics"))
		if insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
	}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(cfg.Headers))
	}
	exp, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("observability: OTLP/HTTP metric exporter: %w", err)
	}
	return exp, nil
}

// Compose is Setup as host/compose takes it (compose.Options.Telemetry):
// this build's version as the service version, the observer and the
// flush; a nil observer when telemetry is off.
func Compose(ctx context.Context, cfg config.Observability, logger *slog.Logger) (host.Observer, func(context.Context) error, error) {
	tel, err := Setup(ctx, cfg, SetupOptions{ServiceVersion: host.Version, Logger: logger})
	if err != nil || tel == nil {
		return nil, nil, err
	}
	return tel.Observer, tel.Shutdown, nil
}
