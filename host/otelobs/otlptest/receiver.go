// Package otlptest is a test kit: an OTLP receiver on loopback (HTTP with
// protobuf bodies, and gRPC) built on the official OTLP protobuf types, which
// keeps every request it received, decoded and as raw bytes, so tests check
// spans, attributes and parent links as they arrived on the wire and scan
// every received byte for values that must never leave. Production code
// never imports it.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Receiver collects OTLP exports.
type Receiver struct {
	// URL is the HTTP endpoint's base URL (http://127.0.0.1:PORT), the
	// value for OTEL_EXPORTER_OTLP_ENDPOINT with http/protobuf.
	URL string
	// GRPCAddr is the gRPC endpoint (http://127.0.0.1:PORT), the value for
	// OTEL_EXPORTER_OTLP_ENDPOINT with grpc.
	GRPCAddr string

	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	raw     [][]byte
	paths   []string
}

// Start starts a receiver on loopback (HTTP and gRPC); the test's cleanup
// stops it.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.serveTraces)
	mux.HandleFunc("/v1/metrics", r.serveMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.mu.Unlock()
		http.NotFound(w, req)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	r.URL = ts.URL

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: listen: %v", err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, traceService{r: r})
	colmetricpb.RegisterMetricsServiceServer(gs, metricsService{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	r.GRPCAddr = "http://" + lis.Addr().String()
	return r
}

func readBody(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(zr, 64<<20))
	}
	return body, nil
}

func (r *Receiver) serveTraces(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.traces = append(r.traces, &msg)
	r.raw = append(r.raw, body, headerBytes(req.Header))
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) serveMetrics(w http.ResponseWriter, req *http.Request) {
	body, err := readBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.metrics = append(r.metrics, &msg)
	r.raw = append(r.raw, body, headerBytes(req.Header))
	r.paths = append(r.paths, req.URL.Path)
	r.mu.Unlock()
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func headerBytes(h http.Header) []byte {
	var b bytes.Buffer
	_ = h.Write(&b)
	return b.Bytes()
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	s.r.mu.Lock()
	s.r.traces = append(s.r.traces, req)
	s.r.raw = append(s.r.raw, raw)
	s.r.paths = append(s.r.paths, "grpc:traces")
	s.r.mu.Unlock()
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(_ context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	s.r.mu.Lock()
	s.r.metrics = append(s.r.metrics, req)
	s.r.raw = append(s.r.raw, raw)
	s.r.paths = append(s.r.paths, "grpc:metrics")
	s.r.mu.Unlock()
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// Span is one received span, flattened for tests.
type Span struct {
	Name                       string
	Kind                       tracepb.Span_SpanKind
	TraceID, SpanID, ParentID  string // hex; ParentID "" for a root
	Attrs                      map[string]string
	Events                     []Event
	StatusError                bool
	Resource                   map[string]string
	Scope                      string
	StartUnixNano, EndUnixNano uint64
}

// Event is a span event.
type Event struct {
	Name  string
	Attrs map[string]string
}

// Spans returns every span received, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, req := range r.traces {
		for _, rs := range req.GetResourceSpans() {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.GetScopeSpans() {
				for _, sp := range ss.GetSpans() {
					s := Span{
						Name: sp.GetName(), Kind: sp.GetKind(),
						TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
						ParentID:      hex.EncodeToString(sp.GetParentSpanId()),
						Attrs:         attrMap(sp.GetAttributes()),
						StatusError:   sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
						Resource:      res,
						Scope:         ss.GetScope().GetName(),
						StartUnixNano: sp.GetStartTimeUnixNano(), EndUnixNano: sp.GetEndTimeUnixNano(),
					}
					for _, e := range sp.GetEvents() {
						s.Events = append(s.Events, Event{Name: e.GetName(), Attrs: attrMap(e.GetAttributes())})
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// MetricNames returns the names of every metric received, sorted, once each.
func (r *Receiver) MetricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, req := range r.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					seen[m.GetName()] = true
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MetricAttrs returns the attribute sets of every data point of the named
// metric (sums, gauges and histograms), each as "k=v,k=v" sorted.
func (r *Receiver) MetricAttrs(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	add := func(attrs []*commonpb.KeyValue) {
		m := attrMap(attrs)
		parts := make([]string, 0, len(m))
		for k, v := range m {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		out = append(out, strings.Join(parts, ","))
	}
	for _, req := range r.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					if m.GetName() != name {
						continue
					}
					for _, dp := range m.GetSum().GetDataPoints() {
						add(dp.GetAttributes())
					}
					for _, dp := range m.GetGauge().GetDataPoints() {
						add(dp.GetAttributes())
					}
					for _, dp := range m.GetHistogram().GetDataPoints() {
						add(dp.GetAttributes())
					}
				}
			}
		}
	}
	return out
}

// Raw returns every byte received: request bodies (decompressed) and HTTP
// request headers.
func (r *Receiver) Raw() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Join(r.raw, []byte{'\n'})
}

// Paths are the HTTP paths (or grpc:traces, grpc:metrics) of the requests
// received.
func (r *Receiver) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// attrMap renders attributes as strings: scalars as Go formats them,
// arrays as [a b c].
func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = valueString(kv.GetValue())
	}
	return m
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, valueString(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_KvlistValue:
		return fmt.Sprint(attrMap(x.KvlistValue.GetValues()))
	}
	return ""
}
