package oauth_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/oauth"
)

const canaryAccess, canaryRefresh, canarySecret = "CANARY-ACCESS-7f3a", "CANARY-REFRESH-91bd", "CANARY-SECRET-c0de"

// A token never prints its secrets, whatever the verb or logger.
func TestTokenRedaction(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := key.Bytes()
	tok := &oauth.Token{AccessToken: canaryAccess, RefreshToken: canaryRefresh, ClientSecret: canarySecret,
		Scopes: []string{"read"}, Expiry: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), DPoPKey: key}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("token", "tok", tok)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("token", "tok", tok)
	outputs := []string{
		fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s %q %x", tok, tok, tok, tok, tok, tok), tok.String(), logs.String(),
		fmt.Sprintf("%+v", oauth.Entry{Token: tok}), fmt.Sprintf("%#v", []*oauth.Token{tok}),
	}
	for _, out := range outputs {
		// The DPoP private key, in the forms fmt would print it.
		for _, c := range []string{canaryAccess, canaryRefresh, canarySecret, new(big.Int).SetBytes(d).String(), fmt.Sprintf("%x", d)} {
			if strings.Contains(out, c) {
				t.Fatalf("output leaks %s: %s", c, out)
			}
		}
	}
	if !strings.Contains(tok.String(), "redacted") || !strings.Contains(tok.String(), "2030-01-01") {
		t.Fatalf("String() = %s", tok)
	}
}

// Stores conformance: keyed by subject, resource and issuer; an empty
// issuer matches the newest; Delete by subject and resource.
func TestStores(t *testing.T) {
	dir := t.TempDir()
	stores := map[string]oauth.TokenStore{
		"memory": oauth.NewMemoryStore(),
		"file":   oauth.NewFileStore(filepath.Join(dir, "state", "agenthost", "tokens.json")),
	}
	for name, s := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ka := oauth.Key{Subject: "a", Resource: "https://m.example.com/mcp", Issuer: "https://as1.example.com"}
			kb := oauth.Key{Subject: "b", Resource: "https://m.example.com/mcp", Issuer: "https://as1.example.com"}
			if _, _, err := s.Get(ctx, ka); !errors.Is(err, oauth.ErrNoToken) {
				t.Fatalf("empty store Get: %v", err)
			}
			if err := s.Put(ctx, oauth.Key{Subject: "a"}, &oauth.Token{}); err == nil {
				t.Fatal("Put accepted a key without resource and issuer")
			}
			must(t, s.Put(ctx, ka, &oauth.Token{AccessToken: "A1", Scopes: []string{"x"}}))
			must(t, s.Put(ctx, kb, &oauth.Token{AccessToken: "B1"}))
			time.Sleep(time.Millisecond) // Saved orders the entries
			ka2 := ka
			ka2.Issuer = "https://as2.example.com"
			must(t, s.Put(ctx, ka2, &oauth.Token{AccessToken: "A2"}))
			tok, key, err := s.Get(ctx, oauth.Key{Subject: "a", Resource: ka.Resource})
			if err != nil || tok.AccessToken != "A2" || key != ka2 {
				t.Fatalf("any-issuer Get = %v %v %v", tok.AccessToken, key, err)
			}
			tok, _, _ = s.Get(ctx, ka)
			if tok.AccessToken != "A1" || tok.Scopes[0] != "x" {
				t.Fatalf("Get(ka) = %v", tok.AccessToken)
			}
			tok, _, _ = s.Get(ctx, kb)
			if tok.AccessToken != "B1" {
				t.Fatalf("Get(kb) = %v", tok.AccessToken)
			}
			must(t, s.Delete(ctx, oauth.Key{Subject: "a", Resource: ka.Resource}))
			if _, _, err := s.Get(ctx, ka); !errors.Is(err, oauth.ErrNoToken) {
				t.Fatal("Delete left a token")
			}
			if list, _ := s.List(ctx); len(list) != 1 || list[0].Key != kb {
				t.Fatalf("List = %v", list)
			}
		})
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dir, "state", "agenthost", "tokens.json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file mode %v, %v", fi.Mode(), err)
		}
		di, _ := os.Stat(filepath.Join(dir, "state", "agenthost"))
		if di.Mode().Perm() != 0o700 {
			t.Fatalf("state directory mode %v", di.Mode())
		}
	}
}

func TestFileStoreCorruptFileErrorHasNoContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens.json")
	must(t, os.WriteFile(p, []byte(`{"tokens":[{"access_token":"`+canaryAccess+`"`), 0o600))
	_, _, err := oauth.NewFileStore(p).Get(context.Background(), oauth.Key{Subject: "a", Resource: "r"})
	if err == nil || strings.Contains(err.Error(), canaryAccess) {
		t.Fatalf("err = %v", err)
	}
}

func TestDefaultFilePath(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/xdg", "HOME": "/home/u"}
	p, _ := oauth.DefaultFilePath(func(k string) string { return env[k] })
	if p != filepath.Join("/xdg", "agenthost", "tokens.json") {
		t.Errorf("with XDG_STATE_HOME: %s", p)
	}
	env["XDG_STATE_HOME"] = "relative"
	p, _ = oauth.DefaultFilePath(func(k string) string { return env[k] })
	if p != filepath.Join("/home/u", ".local", "state", "agenthost", "tokens.json") {
		t.Errorf("without: %s", p)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A FileStore sees what another process (another FileStore on the same
// file) wrote, despite its cache.
func TestFileStoreSeesOtherWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens.json")
	a, b := oauth.NewFileStore(p), oauth.NewFileStore(p)
	k := oauth.Key{Subject: "s", Resource: "https://m.example.com", Issuer: "https://a.example.com"}
	must(t, a.Put(context.Background(), k, &oauth.Token{AccessToken: "one"}))
	if tok, _, err := b.Get(context.Background(), k); err != nil || tok.AccessToken != "one" {
		t.Fatalf("b.Get = %v, %v", tok, err)
	}
	must(t, a.Put(context.Background(), k, &oauth.Token{AccessToken: "second"}))
	if tok, _, err := b.Get(context.Background(), k); err != nil || tok.AccessToken != "second" {
		t.Fatalf("b.Get after a's write = %v, %v", tok, err)
	}
	must(t, a.Delete(context.Background(), k))
	if _, _, err := b.Get(context.Background(), k); !errors.Is(err, oauth.ErrNoToken) {
		t.Fatalf("b.Get after a's delete: %v", err)
	}
}
