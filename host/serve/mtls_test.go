package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for cn, as PEM cert and key.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeTemp(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMutualTLS: under serve.tls.clientCA a client certificate signed by
// that CA authenticates as the identity its common name names (and the
// vote is attributed to it); an unknown name or a certificate of another
// CA does not; bearer tokens keep working over the same listener.
func TestMutualTLS(t *testing.T) {
	m := startMutualTLS(t)
	f, base, ca, client, dora := m.f, m.base, m.ca, m.client, m.dora
	other := newTestCA(t, "someone else's CA")
	tests := []struct {
		name   string
		client *http.Client
		token  string
		want   int
	}{
		{"a certificate naming an identity", dora, "", 200},
		{"a certificate naming nobody", client(ca.issue(t, "mallory", false)), "", 401},
		{"no certificate, no token", client(nil, nil), "", 401},
		{"no certificate, an approver token", client(nil, nil), aliceToken, 200},
		// The server names its CA, so the client does not even offer it.
		{"a certificate of another CA", client(other.issue(t, "dora", false)), "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", base+"/v1/approvals", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}

	// dora's vote, by certificate, is hers in the audit. A client that signs
	// in by certificate sends the CSRF token with every change: the cookie
	// GET /approvals sets, and the same value in a header.
	s := f.createSession(map[string]string{"token": "t"})
	turn := f.startTurn(s.ID, `call db__delete_rows {"where":"id = 9"}`)
	defer turn.Body.Close()
	p := f.waitPending()
	csrf := csrfCookieOf(t, dora, base)
	req, _ := http.NewRequest("POST", base+"/v1/approvals/"+p.ID+"/votes", strings.NewReader(`{"decision":"allow"}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(csrf)
	req.Header.Set(csrfHeader, csrf.Value)
	resp, err := dora.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("dora's vote: %d", resp.StatusCode)
	}
	mustSSE(t, turn.Body)
	_, body, _ := f.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil)
	if !strings.Contains(string(body), `"approvers":[{"id":"dora","decision":"allow"`) {
		t.Errorf("the audit does not attribute the vote to dora: %s", body)
	}
}

// csrfCookieOf fetches the approvals page as client does and returns the
// CSRF cookie it sets.
func csrfCookieOf(t *testing.T, client *http.Client, base string) *http.Cookie {
	t.Helper()
	resp, err := client.Get(base + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp.Body)
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == csrfCookieName(&http.Request{TLS: resp.TLS}) {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || (resp.TLS != nil) != c.Secure {
				t.Errorf("the CSRF cookie is %+v", c)
			}
			if !strings.Contains(string(page), `content="`+c.Value+`"`) {
				t.Error("the page does not carry the cookie's CSRF token")
			}
			return c
		}
	}
	t.Fatalf("GET /approvals set no CSRF cookie: %v", resp.Header.Values("Set-Cookie"))
	return nil
}

// mutualTLS is a fixture whose server also listens with HTTPS and client
// certificates (serve.tls.clientCA); dora is an approver who signs in by
// certificate.
type mutualTLS struct {
	f      *fixture
	base   string // the HTTPS listener's URL
	ca     *testCA
	client func(certPEM, keyPEM []byte) *http.Client
	dora   *http.Client
}

func startMutualTLS(t *testing.T) *mutualTLS {
	t.Helper()
	dir := t.TempDir()
	ca := newTestCA(t, "agenthost test CA")
	srvCert, srvKey := ca.issue(t, "127.0.0.1", true)
	f := newFixture(t, func(c *config.Serve) {
		c.TLS = config.ServeTLS{Cert: writeTemp(t, dir, "srv.pem", srvCert), Key: writeTemp(t, dir, "srv.key", srvKey),
			ClientCA: writeTemp(t, dir, "ca.pem", ca.pem)}
		c.Identities = append(c.Identities, config.Identity{Name: "dora", Roles: []string{config.RoleApprover}})
		c.Listen = "127.0.0.1:0"
	})
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- f.srv.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ListenAndServe: %v", err)
		}
	})
	var base string
	select {
	case a := <-addrc:
		base = "https://" + a.String()
	case err := <-done:
		t.Fatalf("ListenAndServe: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	m := &mutualTLS{f: f, base: base, ca: ca}
	m.client = func(certPEM, keyPEM []byte) *http.Client {
		conf := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certPEM != nil {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			conf.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}
	}
	m.dora = m.client(ca.issue(t, "dora", false))
	return m
}
