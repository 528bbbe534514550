package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/agenthost/agenthost/plugins/proto"
)

const canary = "CANARY-sdk-41b7"

// fake is a configurable CredentialSource.
type fake struct {
	schema    string
	configure func(map[string]any) error
	resolve   func(context.Context, Request) (Result, error)

	mu  sync.Mutex
	got map[string]any
}

func (f *fake) Describe() Info {
	return Info{Name: "fake", Version: "1", ConfigSchema: json.RawMessage(f.schema)}
}

func (f *fake) Configure(_ context.Context, c map[string]any) error {
	f.mu.Lock()
	f.got = c
	f.mu.Unlock()
	if f.configure != nil {
		return f.configure(c)
	}
	return nil
}

func (f *fake) Resolve(ctx context.Context, r Request) (Result, error) { return f.resolve(ctx, r) }

const strictSchema = `{
	"type": "object",
	"properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
	"required": ["path"],
	"additionalProperties": false
}`

func TestConfigure(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		wantErr string // empty: accepted
	}{
		{"valid", `{"path": "/x", "n": 3}`, ""},
		{"empty bytes mean empty object", ``, "missing required key(s) path"},
		{"not JSON", `{"path": "` + canary, "not valid JSON (syntax error at byte"},
		{"array", `["` + canary + `"]`, "must be a JSON object, got an array"},
		{"string", `"` + canary + `"`, "must be a JSON object, got a string"},
		{"null", `null`, "must be a JSON object, got null"},
		{"unknown key", `{"path": "/x", "paht": "` + canary + `"}`, "at /: unknown key(s) paht"},
		{"wrong type", `{"path": 7}`, "at /path: got number, want string"},
		{"missing key", `{"n": 1}`, "missing required key(s) path"},
		{"not an integer", `{"path": "/x", "n": 1.5}`, "at /n: got number, want integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(&fake{schema: strictSchema})
			_, err := srv.Configure(context.Background(), &pb.ConfigureRequest{ConfigJson: []byte(tt.raw)})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Configure: %v", err)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Configure = %v, want InvalidArgument", err)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tt.wantErr) {
				t.Errorf("message %q, want it to contain %q", msg, tt.wantErr)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("error quotes the config: %v", err)
			}
		})
	}
}

func TestConfigureRejectedByImplementation(t *testing.T) {
	srv := newServer(&fake{configure: func(map[string]any) error { return errors.New("vault unreachable") }})
	_, err := srv.Configure(context.Background(), &pb.ConfigureRequest{ConfigJson: []byte(`{}`)})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "vault unreachable") {
		t.Fatalf("Configure = %v", err)
	}
	if _, err := srv.Resolve(context.Background(), &pb.ResolveRequest{Ref: "x"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Resolve after a failed Configure = %v, want FailedPrecondition", err)
	}
}

func TestResolve(t *testing.T) {
	expiry := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		resolve  func(context.Context, Request) (Result, error)
		ctx      func() context.Context
		wantCode codes.Code
		wantResp *pb.ResolveResponse
	}{
		{
			name:     "value with expiry, default sensitivity is secret",
			resolve:  func(context.Context, Request) (Result, error) { return Result{Value: "v", Expiry: expiry}, nil },
			wantResp: &pb.ResolveResponse{Value: "v", Sensitivity: pb.Sensitivity_SENSITIVITY_SECRET},
		},
		{
			name:     "public",
			resolve:  func(context.Context, Request) (Result, error) { return Result{Value: "v", Sensitivity: Public}, nil },
			wantResp: &pb.ResolveResponse{Value: "v", Sensitivity: pb.Sensitivity_SENSITIVITY_PUBLIC},
		},
		{
			name:     "internal",
			resolve:  func(context.Context, Request) (Result, error) { return Result{Value: "v", Sensitivity: Internal}, nil },
			wantResp: &pb.ResolveResponse{Value: "v", Sensitivity: pb.Sensitivity_SENSITIVITY_INTERNAL},
		},
		{
			name:     "unknown ref",
			resolve:  func(context.Context, Request) (Result, error) { return Result{}, errors.Join(ErrUnknownRef) },
			wantCode: codes.NotFound,
		},
		{
			name:     "deadline",
			resolve:  func(context.Context, Request) (Result, error) { return Result{}, context.DeadlineExceeded },
			wantCode: codes.DeadlineExceeded,
		},
		{
			name:     "other error",
			resolve:  func(context.Context, Request) (Result, error) { return Result{}, errors.New("backend down") },
			wantCode: codes.Unknown,
		},
		{
			name: "cancelled before the call",
			resolve: func(context.Context, Request) (Result, error) {
				panic("must not be called")
			},
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			wantCode: codes.Canceled,
		},
		{
			name:     "panic is recovered without its value",
			resolve:  func(context.Context, Request) (Result, error) { panic("holding " + canary) },
			wantCode: codes.Internal,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(&fake{resolve: tt.resolve})
			if _, err := srv.Configure(context.Background(), &pb.ConfigureRequest{}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			resp, err := srv.Resolve(ctx, &pb.ResolveRequest{Ref: "r"})
			if tt.wantResp == nil {
				if status.Code(err) != tt.wantCode {
					t.Fatalf("Resolve = %v, want code %v", err, tt.wantCode)
				}
				if strings.Contains(err.Error(), canary) {
					t.Errorf("error carries the panic value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.GetValue() != tt.wantResp.GetValue() || resp.GetSensitivity() != tt.wantResp.GetSensitivity() {
				t.Errorf("Resolve = %v, want %v", resp, tt.wantResp)
			}
			if tt.name == "value with expiry, default sensitivity is secret" && !resp.GetExpiry().AsTime().Equal(expiry) {
				t.Errorf("expiry = %v, want %v", resp.GetExpiry().AsTime(), expiry)
			}
			if tt.name == "public" && resp.GetExpiry() != nil {
				t.Errorf("zero expiry sent as %v, want unset", resp.GetExpiry())
			}
		})
	}
}

func TestResolvePassesRequest(t *testing.T) {
	var got Request
	srv := newServer(&fake{resolve: func(_ context.Context, r Request) (Result, error) { got = r; return Result{Value: "v"}, nil }})
	if _, err := srv.Configure(context.Background(), &pb.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err := srv.Resolve(context.Background(), &pb.ResolveRequest{
		SessionId: "s", Subject: "u", Server: "srv", Tool: "t", Param: "p", ParamSchemaJson: []byte(`{}`), Ref: "r",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Request{SessionID: "s", Subject: "u", Server: "srv", Tool: "t", Param: "p", ParamSchema: json.RawMessage(`{}`), Ref: "r"}
	if got.SessionID != want.SessionID || got.Subject != want.Subject || got.Server != want.Server ||
		got.Tool != want.Tool || got.Param != want.Param || got.Ref != want.Ref || string(got.ParamSchema) != "{}" {
		t.Errorf("impl saw %+v, want %+v", got, want)
	}
}

func TestWriteDescription(t *testing.T) {
	var buf bytes.Buffer
	if err := writeDescription(&buf, (&fake{schema: `{"type":"object"}`}).Describe()); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("describe output is not JSON: %v\n%s", err, buf.String())
	}
	if got["name"] != "fake" || got["version"] != "1" || got["configSchema"].(map[string]any)["type"] != "object" {
		t.Errorf("describe output = %v", got)
	}
	if err := writeDescription(&buf, Info{Name: "x", ConfigSchema: json.RawMessage(`{broken`)}); err == nil {
		t.Error("an invalid schema was printed")
	}
}

func TestDrainWaitsForInflightCalls(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(&fake{resolve: func(ctx context.Context, _ Request) (Result, error) {
		<-release
		return Result{}, ctx.Err()
	}})
	if _, err := srv.Configure(context.Background(), &pb.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _, _ = srv.Resolve(context.Background(), &pb.ResolveRequest{}); close(done) }()
	time.Sleep(20 * time.Millisecond)
	began := time.Now()
	srv.drain(100 * time.Millisecond)
	if time.Since(began) < 100*time.Millisecond {
		t.Error("drain returned while a call was in flight")
	}
	close(release)
	<-done
	began = time.Now()
	srv.drain(time.Second)
	if time.Since(began) > 100*time.Millisecond {
		t.Error("drain waited with nothing in flight")
	}
}
