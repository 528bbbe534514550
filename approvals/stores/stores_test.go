package stores

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://agenthost:pw-canary@db:5432/x?sslmode=disable", "postgres://agenthost:xxxxx@db:5432/x?sslmode=disable"},
		{"postgres://agenthost@db/x", "postgres://agenthost@db/x"},
		{"postgres://u:pw-canary@[::1/x", "postgres://(unparsable URL)"},
		{"sqlite:./a.db", "sqlite:./a.db"},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != tc.want || strings.Contains(got, "pw-canary") {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOpenByDSN(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, "mysql://x"); !errors.Is(err, ErrUnknownDSN) {
		t.Errorf("unknown scheme: %v", err)
	}
	mem, err := Open(ctx, "")
	if _, ok := mem.(*approvals.MemStore); err != nil || !ok {
		t.Errorf("empty DSN: %T, %v", mem, err)
	}
	s, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}
