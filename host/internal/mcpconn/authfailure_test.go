package mcpconn

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// authFailure stands for host.AuthorizationFailure, which an Authorizer's
// transport wraps a request's failed authorization in.
type authFailure struct{ error }

func (authFailure) IsAuthorizationFailure() bool { return true }

// An authorization failure of one request (one session's subject) must not
// drop the connection that every session shares.
func TestAuthorizationFailureIsNotAConnectionFailure(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"authorization required", transport.NewError(fmt.Errorf("failed to send request: %w", authFailure{errors.New("authorization required")})), false},
		{"authorization server error", transport.NewError(authFailure{errors.New("invalid_grant")}), false},
		{"other transport error", transport.NewError(errors.New("connection reset")), true},
		{"EOF", io.EOF, true},
	}
	for _, tt := range tests {
		if got := isConnectionFailure(tt.err); got != tt.want {
			t.Errorf("%s: isConnectionFailure = %v, want %v", tt.name, got, tt.want)
		}
	}
}
