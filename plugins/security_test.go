//go:build linux

package plugins_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
	pb "github.com/agenthost/agenthost/plugins/proto"
)

// pluginSocket finds the unix socket a running plugin listens on.
func pluginSocket(t *testing.T, dir string) string {
	t.Helper()
	var sock string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSocket != 0 {
			sock = p
		}
		return nil
	})
	if sock == "" {
		t.Fatalf("no socket under %s", dir)
	}
	return sock
}

// TestOnlyTheHostCanTalkToThePlugin: with AutoMTLS the plugin's socket
// refuses clients without the host's one-time certificate.
func TestOnlyTheHostCanTalkToThePlugin(t *testing.T) {
	h := newHarness(t, bin.testPlugin, nil)
	resolve(t, h.src, "echo/x")
	sock := pluginSocket(t, h.socketDir)
	dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	})

	stranger := selfSignedCert(t)
	creds := map[string]grpc.DialOption{
		"plaintext": grpc.WithTransportCredentials(insecure.NewCredentials()),
		"TLS with a stranger's certificate": grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			Certificates:       []tls.Certificate{stranger},
			InsecureSkipVerify: true, // the attacker does not care who the server is
		})),
	}
	for name, cred := range creds {
		t.Run(name, func(t *testing.T) {
			conn, err := grpc.NewClient("passthrough:///plugin", dialer, cred)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := pb.NewCredentialClient(conn).Resolve(ctx, &pb.ResolveRequest{Ref: "echo/x"}); err == nil {
				t.Fatal("a client without the host's certificate resolved a value")
			}
		})
	}
	resolve(t, h.src, "echo/still-serving-the-host")
}

func selfSignedCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestDescribeSubcommand(t *testing.T) {
	out, err := exec.Command(bin.credFile, "describe").Output()
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	for _, want := range []string{`"name": "agenthost-cred-file"`, `"version"`, `"configSchema"`, `"path"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("describe output lacks %s:\n%s", want, out)
		}
	}
	// Run by hand without the subcommand, a plugin refuses and explains.
	cmd := exec.Command(bin.credFile)
	cmd.Env = []string{}
	msg, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || !strings.Contains(string(msg), "This binary is a plugin") {
		t.Errorf("plugin run by hand: %v\n%s", err, msg)
	}
}

func TestNotExecutable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin")
	b, err := os.ReadFile(bin.testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, path, nil)
	_, err = h.src.Resolve(context.Background(), bindings.Request{Ref: "echo/x"})
	if !errors.Is(err, plugins.ErrStart) || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("Resolve = %v, want ErrStart about permission", err)
	}
	// Named by the configured path, not by the pinned copy's.
	if !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "/proc/self/fd") {
		t.Fatalf("Resolve = %v, want the error to name %s", err, path)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src, err := plugins.NewSource(plugins.Options{
		Path:      bin.testPlugin,
		Checksum:  checksum(t, bin.testPlugin),
		SocketDir: shortTempDir(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	resolve(t, src, "echo/x")
	if _, err := src.Resolve(context.Background(), bindings.Request{Ref: "crash"}); !errors.Is(err, plugins.ErrPluginExited) {
		t.Fatalf("crash: %v", err)
	}
	resolve(t, src, "echo/restarted")
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}
