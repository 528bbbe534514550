package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/agenthost/agenthost/plugins/proto"
)

// GRPCServer adapts impl to the generated gRPC service. Serve uses it; so
// does the plugintest kit. Plugins do not need it.
func GRPCServer(impl CredentialSource) pb.CredentialServer { return newServer(impl) }

type server struct {
	pb.UnimplementedCredentialServer
	impl CredentialSource

	configured atomic.Bool
	// configureMu serialises Configure calls so an implementation never sees
	// two at once; Resolve is not held up by it.
	configureMu sync.Mutex

	// In-flight calls, counted so Serve can let them finish (drain). Not a
	// WaitGroup: a late call may arrive while drain waits.
	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to zero
}

func newServer(impl CredentialSource) *server { return &server{impl: impl} }

func (s *server) enter() {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
}

func (s *server) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// drain waits up to d for in-flight calls to return.
func (s *server) drain(d time.Duration) {
	s.mu.Lock()
	if s.inflight == 0 {
		s.mu.Unlock()
		return
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

func (s *server) Describe(context.Context, *pb.DescribeRequest) (resp *pb.DescribeResponse, err error) {
	defer recoverInto(&err, "Describe")
	info := s.impl.Describe()
	if len(info.ConfigSchema) > 0 && !json.Valid(info.ConfigSchema) {
		return nil, status.Error(codes.Internal, "plugin config schema is not valid JSON")
	}
	return &pb.DescribeResponse{Name: info.Name, Version: info.Version, ConfigSchemaJson: info.ConfigSchema}, nil
}

func (s *server) Configure(ctx context.Context, req *pb.ConfigureRequest) (resp *pb.ConfigureResponse, err error) {
	s.enter()
	defer s.leave()
	defer recoverInto(&err, "Configure")

	config, err := decodeConfig(req.GetConfigJson())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := validateConfig(s.impl.Describe().ConfigSchema, config); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.configureMu.Lock()
	defer s.configureMu.Unlock()
	if err := s.impl.Configure(ctx, config); err != nil {
		if code, ok := contextCode(err); ok {
			return nil, status.Error(code, err.Error())
		}
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	s.configured.Store(true)
	return &pb.ConfigureResponse{}, nil
}

func (s *server) Resolve(ctx context.Context, req *pb.ResolveRequest) (resp *pb.ResolveResponse, err error) {
	s.enter()
	defer s.leave()
	defer recoverInto(&err, "Resolve")

	if !s.configured.Load() {
		return nil, status.Error(codes.FailedPrecondition, ErrNotConfigured.Error())
	}
	if err := ctx.Err(); err != nil {
		code, _ := contextCode(err)
		return nil, status.Error(code, err.Error())
	}
	res, err := s.impl.Resolve(ctx, Request{
		SessionID:   req.GetSessionId(),
		Subject:     req.GetSubject(),
		Server:      req.GetServer(),
		Tool:        req.GetTool(),
		Param:       req.GetParam(),
		ParamSchema: req.GetParamSchemaJson(),
		Ref:         req.GetRef(),
	})
	if err != nil {
		switch code, isCtx := contextCode(err); {
		case errors.Is(err, ErrUnknownRef):
			return nil, status.Error(codes.NotFound, err.Error())
		case isCtx:
			return nil, status.Error(code, err.Error())
		default:
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	out := &pb.ResolveResponse{Value: res.Value, Sensitivity: sensitivityToProto(res.Sensitivity)}
	if !res.Expiry.IsZero() {
		out.Expiry = timestamppb.New(res.Expiry)
	}
	return out, nil
}

// recoverInto turns a panic in an implementation into an Internal error. The
// panic value is deliberately dropped: it may hold the value being resolved.
// The stack goes to stderr for the author; it holds addresses, not contents.
func recoverInto(err *error, method string) {
	if r := recover(); r != nil {
		fmt.Fprintf(os.Stderr, "[ERROR] plugin panicked in %s (panic value withheld):\n%s\n", method, debug.Stack())
		*err = status.Errorf(codes.Internal, "plugin panicked in %s", method)
	}
}

func contextCode(err error) (codes.Code, bool) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, true
	case errors.Is(err, context.Canceled):
		return codes.Canceled, true
	}
	return codes.OK, false
}

func sensitivityToProto(s Sensitivity) pb.Sensitivity {
	switch s {
	case Public:
		return pb.Sensitivity_SENSITIVITY_PUBLIC
	case Internal:
		return pb.Sensitivity_SENSITIVITY_INTERNAL
	default:
		return pb.Sensitivity_SENSITIVITY_SECRET
	}
}
