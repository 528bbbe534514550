//go:build linux

package plugins_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

const tenantsYAML = `
orders/token:
  value: default-token
  expiration: 2031-02-03T04:05:06Z
  tenants:
    acme: acme-token
    globex: globex-token
plain: plain-value
`

func writeCreds(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func credFileSource(t *testing.T, content string) (*plugins.Source, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "creds.yaml")
	writeCreds(t, path, content, time.Now().Add(-time.Hour))
	h := newHarness(t, bin.credFile, func(o *plugins.Options) { o.Config = map[string]any{"path": path} })
	return h.src, path
}

func TestCredFileTenantsConcurrent(t *testing.T) {
	src, _ := credFileSource(t, tenantsYAML)
	want := map[string]string{"acme": "acme-token", "globex": "globex-token", "initech": "default-token", "": "default-token"}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := []string{"acme", "globex", "initech", ""}[i%4]
			res, err := src.Resolve(context.Background(), bindings.Request{
				Scope: bindings.Scope{SessionID: fmt.Sprint("s", i), Subject: subject},
				Ref:   "orders/token",
			})
			switch {
			case err != nil:
				errs <- err
			case res.Value != want[subject]:
				errs <- fmt.Errorf("subject %q got another tenant's value", subject)
			case !res.Expiry.Equal(time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)):
				errs <- fmt.Errorf("subject %q: expiry %v", subject, res.Expiry)
			case res.Sensitivity != bindings.Secret:
				errs <- fmt.Errorf("sensitivity %v, want Secret", res.Sensitivity)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCredFileReloadsChangedFile(t *testing.T) {
	src, path := credFileSource(t, "plain: first\n")
	if got := resolve(t, src, "plain").Value; got != "first" {
		t.Fatalf("got %q", got)
	}
	writeCreds(t, path, "plain: second\n", time.Now())
	if got := resolve(t, src, "plain").Value; got != "second" {
		t.Errorf("after rewrite got %q, want second", got)
	}
	writeCreds(t, path, "plain: [unclosed\n", time.Now().Add(time.Second))
	if _, err := src.Resolve(context.Background(), bindings.Request{Ref: "plain"}); err == nil {
		t.Error("an invalid file still served a value; it must fail closed")
	}
	writeCreds(t, path, "plain: third\n", time.Now().Add(2*time.Second))
	if got := resolve(t, src, "plain").Value; got != "third" {
		t.Errorf("after fix got %q, want third", got)
	}
}

// BenchmarkCredFileRoundTrip measures one Resolve through a real
// agenthost-cred-file process: host -> gRPC over mTLS unix socket ->
// plugin (stat + map lookup) -> host.
func BenchmarkCredFileRoundTrip(b *testing.B) {
	path := filepath.Join(b.TempDir(), "creds.yaml")
	if err := os.WriteFile(path, []byte(tenantsYAML), 0o600); err != nil {
		b.Fatal(err)
	}
	sockets, err := os.MkdirTemp("", "pb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(sockets)
	src, err := plugins.NewSource(plugins.Options{
		Path:      bin.credFile,
		Checksum:  checksum(b, bin.credFile),
		Config:    map[string]any{"path": path},
		SocketDir: sockets,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	req := bindings.Request{Scope: bindings.Scope{Subject: "acme"}, Ref: "orders/token"}
	resolve(b, src, req.Ref) // start the plugin outside the timing

	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if _, err := src.Resolve(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := src.Resolve(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
