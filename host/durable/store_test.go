package durable_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/historytest"
	"github.com/agenthost/agenthost/host/model"
)

func TestStoreConformance(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		historytest.RunSequenced(t, func(t *testing.T) host.SequencedHistory {
			e, err := durable.Open(context.Background(), b.dsn, durable.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return prefixed{e.Store(), t.Name()}
		})
	})
}

// prefixed gives each subtest its own session ids in the shared database.
type prefixed struct {
	*durable.Store
	prefix string
}

func (p prefixed) Load(ctx context.Context, id string) ([]model.Message, error) {
	return p.Store.Load(ctx, p.prefix+"/"+id)
}

func (p prefixed) Append(ctx context.Context, id string, msgs ...model.Message) error {
	return p.Store.Append(ctx, p.prefix+"/"+id, msgs...)
}

func (p prefixed) AppendAt(ctx context.Context, id string, at int, msgs ...model.Message) error {
	return p.Store.AppendAt(ctx, p.prefix+"/"+id, at, msgs...)
}

// An engine that cannot reach its database never repeats the DSN's
// password in its error (URL and key/value DSNs).
func TestOpenErrorHidesThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://agenthost:pw-canary-91@127.0.0.1:1/agenthost?connect_timeout=2",
		"host=127.0.0.1 port=1 user=agenthost password=pw-canary-91 dbname=agenthost connect_timeout=2",
		"postgres://agenthost:pw-canary-91@127.0.0.1:1/agenthost?sslmode=bogus",
		// Does not parse at all: no password can be taken out to mask.
		"postgres://agenthost:pw-canary-91@127.0.0.1:notaport/agenthost",
		"host=127.0.0.1 password='pw-canary-91",
	} {
		_, err := durable.Open(context.Background(), dsn, durable.Options{})
		if err == nil {
			t.Fatalf("%s: opened", dsn)
		}
		if strings.Contains(err.Error(), "pw-canary-91") {
			t.Fatalf("the error repeats the password: %v", err)
		}
	}
}
