// Package plugintest is the test kit for credential plugins. Run checks an
// implementation against the protocol's conformance cases, in-process over
// go-plugin's TestPluginGRPCConn (real gRPC, no subprocess). NewSource
// gives a test a bindings.Source backed by an in-process implementation.
//
//	func TestConformance(t *testing.T) {
//		plugintest.Run(t, newMySource(), plugintest.Options{
//			Config: map[string]any{"path": "testdata/creds.yaml"},
//			Known:  bindings.Request{Ref: "orders/token"},
//			Want:   "s3cr3t",
//		})
//	}
package plugintest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/agenthost/agenthost/plugins/internal/wire"
	"github.com/agenthost/agenthost/plugins/sdk"
)

// Options tells Run how to drive the implementation.
type Options struct {
	// Config is a configuration the implementation accepts.
	Config map[string]any
	// Known, if its Ref is set, is a request that resolves with Config.
	// Without it the concurrency case only exercises the error path.
	Known bindings.Request
	// Want, if set, is the value Known must resolve to.
	Want string
	// BlockingRef, if set, is a ref whose Resolve does not finish on its
	// own quickly (a slow backend, a sleeping command): the cancellation
	// case then checks that an in-flight call ends when its context does.
	BlockingRef string
	// Concurrency is the number of simultaneous Resolve calls in the
	// concurrency case. Default 50.
	Concurrency int
}

// unknownConfigKey is a key no plugin's configuration should accept.
const unknownConfigKey = "agenthost-conformance-unknown-key"

// unknownRef is a ref no plugin should know.
const unknownRef = "agenthost-conformance/no-such-ref-5d1c"

// cancelGrace is how long after its context ends a call may take to return.
const cancelGrace = 2 * time.Second

// Run checks impl against the conformance cases, each as a subtest:
// Describe reports a name, version and compilable config schema; Configure
// rejects garbage (not JSON, not an object, an unknown key) with
// InvalidArgument and accepts opts.Config; Resolve before Configure fails;
// an unknown ref is an error; cancelled calls end with a context error;
// concurrent Resolves all get the same answer.
func Run(t *testing.T, impl sdk.CredentialSource, opts Options) {
	t.Helper()
	if opts.Concurrency <= 0 {
		opts.Concurrency = 50
	}

	t.Run("Describe", func(t *testing.T) {
		src := connect(t, impl)
		info, err := src.Describe(context.Background())
		if err != nil {
			t.Fatalf("Describe: %v", err)
		}
		if info.Name == "" || info.Version == "" {
			t.Errorf("Describe = name %q, version %q; both must be non-empty", info.Name, info.Version)
		}
		if len(bytes.TrimSpace(info.ConfigSchema)) == 0 {
			t.Fatal("Describe returned no config schema")
		}
		if err := compileSchema(info.ConfigSchema); err != nil {
			t.Errorf("config schema: %v", err)
		}
	})

	t.Run("ConfigureRejectsGarbage", func(t *testing.T) {
		withUnknownKey := map[string]any{unknownConfigKey: true}
		for k, v := range opts.Config {
			withUnknownKey[k] = v
		}
		cases := []struct {
			name string
			raw  []byte
		}{
			{"not JSON", []byte("{not json")},
			{"array", []byte(`[1, 2]`)},
			{"string", []byte(`"config"`)},
			{"null", []byte(`null`)},
			{"unknown key", mustJSON(t, withUnknownKey)},
		}
		src := connect(t, impl)
		for _, tc := range cases {
			err := src.ConfigureJSON(context.Background(), tc.raw)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("Configure(%s) = %v; want an InvalidArgument error", tc.name, err)
			}
		}
	})

	t.Run("ConfigureAcceptsConfig", func(t *testing.T) {
		src := connect(t, impl)
		if err := src.Configure(context.Background(), opts.Config); err != nil {
			t.Fatalf("Configure(Options.Config): %v", err)
		}
	})

	t.Run("ResolveBeforeConfigure", func(t *testing.T) {
		src := connect(t, impl)
		_, err := src.Resolve(context.Background(), bindings.Request{Ref: unknownRef})
		if !errors.Is(err, sdk.ErrNotConfigured) {
			t.Errorf("Resolve before Configure = %v; want %v", err, sdk.ErrNotConfigured)
		}
	})

	t.Run("UnknownRef", func(t *testing.T) {
		src := NewSource(t, impl, opts.Config)
		res, err := src.Resolve(context.Background(), bindings.Request{Ref: unknownRef})
		if err == nil {
			t.Fatalf("Resolve(unknown ref) returned a value (%d bytes); want an error", len(res.Value))
		}
	})

	if opts.Known.Ref != "" {
		t.Run("KnownRef", func(t *testing.T) {
			src := NewSource(t, impl, opts.Config)
			res, err := src.Resolve(context.Background(), opts.Known)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", opts.Known.Ref, err)
			}
			if opts.Want != "" && res.Value != opts.Want {
				t.Errorf("Resolve(%q) returned a different value than Options.Want", opts.Known.Ref)
			}
		})
	}

	t.Run("Cancellation", func(t *testing.T) {
		src := NewSource(t, impl, opts.Config)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := opts.Known
		if req.Ref == "" {
			req.Ref = unknownRef
		}
		if _, err := src.Resolve(ctx, req); !errors.Is(err, context.Canceled) {
			t.Errorf("Resolve with a cancelled context = %v; want context.Canceled", err)
		}
		if opts.BlockingRef == "" {
			return
		}
		const timeout = 200 * time.Millisecond
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
		defer cancel()
		began := time.Now()
		_, err := src.Resolve(ctx, bindings.Request{Ref: opts.BlockingRef})
		took := time.Since(began)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Resolve(%q) past its deadline = %v; want context.DeadlineExceeded", opts.BlockingRef, err)
		}
		if took > timeout+cancelGrace {
			t.Errorf("Resolve(%q) took %s after a %s deadline; it must stop when its context ends", opts.BlockingRef, took, timeout)
		}
	})

	t.Run("ConcurrentResolve", func(t *testing.T) {
		src := NewSource(t, impl, opts.Config)
		req, wantErr := opts.Known, false
		if req.Ref == "" {
			req, wantErr = bindings.Request{Ref: unknownRef}, true
		}
		var wg sync.WaitGroup
		errs := make(chan error, opts.Concurrency)
		for range opts.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := src.Resolve(context.Background(), req)
				switch {
				case wantErr && err == nil:
					errs <- fmt.Errorf("unknown ref resolved")
				case !wantErr && err != nil:
					errs <- err
				case !wantErr && opts.Want != "" && res.Value != opts.Want:
					errs <- fmt.Errorf("got a different value than Options.Want")
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("concurrent Resolve(%q): %v", req.Ref, err)
		}
	})
}

// Source is a bindings.Source backed by an implementation running
// in-process behind a real gRPC connection.
type Source struct {
	client *wire.Client
}

var _ bindings.Source = (*Source)(nil)

// NewSource connects impl in-process, configures it with config, and
// closes the connection when the test ends.
func NewSource(t testing.TB, impl sdk.CredentialSource, config map[string]any) *Source {
	t.Helper()
	src := connect(t, impl)
	if err := src.Configure(context.Background(), config); err != nil {
		t.Fatalf("plugintest: Configure: %v", err)
	}
	return src
}

func connect(t testing.TB, impl sdk.CredentialSource) *Source {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, wire.PluginSet(sdk.GRPCServer(impl)))
	t.Cleanup(func() {
		// Close asks the server to stop (go-plugin's Shutdown RPC); calling
		// server.Stop as well would race with that.
		_ = client.Close()
		select {
		case <-server.DoneCh:
		case <-time.After(5 * time.Second):
			server.Stop()
		}
	})
	raw, err := client.Dispense(wire.PluginName)
	if err != nil {
		t.Fatalf("plugintest: dispense: %v", err)
	}
	return &Source{client: raw.(*wire.Client)}
}

// Describe calls the implementation's Describe over gRPC.
func (s *Source) Describe(ctx context.Context) (sdk.Info, error) {
	info, err := s.client.Describe(ctx)
	if err != nil {
		return sdk.Info{}, mapError(ctx, err)
	}
	return sdk.Info{Name: info.Name, Version: info.Version, ConfigSchema: info.ConfigSchema}, nil
}

// Configure sends config over gRPC. The error keeps its gRPC status.
func (s *Source) Configure(ctx context.Context, config map[string]any) error {
	return s.client.Configure(ctx, config)
}

// ConfigureJSON sends raw bytes as the configuration, unchecked. The error
// keeps its gRPC status.
func (s *Source) ConfigureJSON(ctx context.Context, raw []byte) error {
	return s.client.ConfigureJSON(ctx, raw)
}

// Resolve implements bindings.Source. Errors wrap sdk.ErrUnknownRef,
// sdk.ErrNotConfigured or the context's error where those apply, and the
// gRPC status error otherwise.
func (s *Source) Resolve(ctx context.Context, req bindings.Request) (bindings.Resolved, error) {
	res, err := s.client.Resolve(ctx, req)
	if err != nil {
		return bindings.Resolved{}, mapError(ctx, err)
	}
	return res, nil
}

func mapError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plugintest: %w", ctx.Err())
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("plugintest: %w: %s", sdk.ErrUnknownRef, st.Message())
	case codes.FailedPrecondition:
		return fmt.Errorf("plugintest: %w: %s", sdk.ErrNotConfigured, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("plugintest: %w: %s", context.DeadlineExceeded, st.Message())
	case codes.Canceled:
		return fmt.Errorf("plugintest: %w: %s", context.Canceled, st.Message())
	}
	return fmt.Errorf("plugintest: %w", err)
}

func compileSchema(schema []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	_, err = safeschema.Compile(doc, "config.json", nil)
	return err
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("plugintest: %v", err)
	}
	return b
}
