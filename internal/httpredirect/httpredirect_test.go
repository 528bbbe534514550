package httpredirect_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/internal/httpredirect"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?x=1", true},
		{"https://Example.COM/a", "HTTPS://example.com:443/b", true},
		{"http://example.com/a", "http://example.com:80/", true},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false}, // another port
		{"http://example.com/", "https://example.com/", false},      // the upgrade
		{"https://example.com/", "http://example.com:443/", false},  // a downgrade, same port
		{"https://example.com/", "https://evil.example.com/", false},
		{"https://example.com/", "https://example.com.evil/", false},
		{"https://user@example.com/", "https://example.com/", true}, // user information is no part of the origin
	}
	for _, tt := range tests {
		if got := httpredirect.SameOrigin(mustURL(t, tt.a), mustURL(t, tt.b)); got != tt.want {
			t.Errorf("SameOrigin(%s, %s) = %t, want %t", tt.a, tt.b, got, tt.want)
		}
	}
	if got := httpredirect.Origin(mustURL(t, "HTTPS://Example.com/x?q")); got != "https://example.com:443" {
		t.Errorf("Origin = %s", got)
	}
}

const canaryAuth, canaryKey = "Bearer CANARY-AUTH-5d1e", "CANARY-KEY-77ab"

// TestRedirects runs each case against real loopback servers: a is the
// configured origin, b another port of the same host (another origin).
func TestRedirects(t *testing.T) {
	tests := []struct {
		name string
		// location is where a's /start redirects to, from a's and b's URLs.
		location func(a, b string) string
		status   int
		admit    func(*url.URL) error
		// wantErr is "" for a redirect that is followed to a's /end.
		wantErr string
	}{
		{"same origin, 307", func(a, _ string) string { return a + "/end" }, http.StatusTemporaryRedirect, nil, ""},
		{"same origin, 308", func(a, _ string) string { return a + "/end" }, http.StatusPermanentRedirect, nil, ""},
		{"same origin, 302", func(a, _ string) string { return a + "/end" }, http.StatusFound, nil, ""},
		{"same origin, relative", func(string, string) string { return "/end" }, http.StatusTemporaryRedirect, nil, ""},
		{"another port, 307", func(_, b string) string { return b + "/end" }, http.StatusTemporaryRedirect, nil, "to http://127.0.0.1:"},
		{"another port, 301", func(_, b string) string { return b + "/end" }, http.StatusMovedPermanently, nil, "within the origin"},
		{"another port, 303", func(_, b string) string { return b + "/end" }, http.StatusSeeOther, nil, "within the origin"},
		{"the https upgrade of the same host and port", func(a, _ string) string { return strings.Replace(a, "http:", "https:", 1) + "/end" },
			http.StatusTemporaryRedirect, nil, "to https://127.0.0.1:"},
		{"same origin, not admitted", func(a, _ string) string { return a + "/end" }, http.StatusTemporaryRedirect,
			func(u *url.URL) error {
				if u.Path == "/end" {
					return errors.New("not on the list")
				}
				return nil
			}, "not admitted: not on the list"},
		// A path may carry a token (webhook and chat URLs do): a refusal
		// names the target's origin only.
		{"same origin, not admitted, a token in the path", func(a, _ string) string { return a + "/hooks/CANARY-PATH-TOKEN/end" }, http.StatusTemporaryRedirect,
			func(u *url.URL) error {
				if strings.Contains(u.Path, "CANARY") {
					return errors.New("not on the list")
				}
				return nil
			}, "not admitted: not on the list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "b") }))
			var a *redirecttest.Server
			a = redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/start" {
					w.Header().Set("Location", tt.location(a.URL, b.URL))
					w.WriteHeader(tt.status)
					return
				}
				fmt.Fprint(w, "a")
			}))
			c := httpredirect.NewClient(nil, httpredirect.Policy{Admit: tt.admit})
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/start?k=CANARY-QUERY", strings.NewReader("body"))
			req.Header.Set("Authorization", canaryAuth)
			req.Header.Set("X-Api-Key", canaryKey)
			resp, err := c.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			if len(b.Requests()) != 0 {
				t.Fatalf("the other origin received %d request(s); canaries seen: auth %t, key %t", len(b.Requests()), b.Saw("CANARY-AUTH"), b.Saw(canaryKey))
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				reqs := a.Requests()
				last := reqs[len(reqs)-1]
				if last.Path != "/end" || last.Header.Get("Authorization") != canaryAuth || last.Header.Get("X-Api-Key") != canaryKey {
					t.Fatalf("the same-origin hop: %s with Authorization %q, X-Api-Key %q", last.Path, last.Header.Get("Authorization"), last.Header.Get("X-Api-Key"))
				}
				return
			}
			var re *httpredirect.Error
			if !errors.Is(err, httpredirect.ErrRefused) || !errors.As(err, &re) {
				t.Fatalf("err = %v, want a refused redirect", err)
			}
			if !strings.Contains(re.Error(), tt.wantErr) || !strings.Contains(re.Error(), "from "+httpredirect.Origin(mustURL(t, a.URL))) {
				t.Fatalf("message %q, want one naming the origin and %q", re.Error(), tt.wantErr)
			}
			if strings.Contains(re.Error(), "CANARY") {
				t.Fatalf("the message shows a request's value: %s", re.Error())
			}
			if got := a.Requests(); len(got) != 1 {
				t.Fatalf("the configured origin received %d requests, want 1", len(got))
			}
		})
	}
}

// A chain of redirects within the origin ends after MaxHops of them.
func TestRedirectHopsAreBounded(t *testing.T) {
	var n int
	a := redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		http.Redirect(w, r, fmt.Sprintf("/hop%d", n), http.StatusFound)
	}))
	resp, err := httpredirect.NewClient(nil, httpredirect.Policy{}).Get(a.URL)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, httpredirect.ErrRefused) || !strings.Contains(err.Error(), "more than 10 redirects") {
		t.Fatalf("err = %v", err)
	}
	// The request and MaxHops redirects.
	if got := len(a.Requests()); got != 1+httpredirect.MaxHops {
		t.Fatalf("%d requests, want %d", got, 1+httpredirect.MaxHops)
	}
}

// Apply puts the policy on a caller's client (its own CheckRedirect is
// asked after it) and leaves the caller's client as it was.
func TestApply(t *testing.T) {
	b := redirecttest.New(t, nil)
	a := redirecttest.New(t, redirecttest.Redirect(http.StatusTemporaryRedirect, b.URL))
	caller := &http.Client{}
	c := httpredirect.Apply(caller, httpredirect.Policy{})
	if caller.CheckRedirect != nil {
		t.Fatal("Apply changed the caller's client")
	}
	resp, err := c.Get(a.URL + "/x")
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, httpredirect.ErrRefused) || len(b.Requests()) != 0 {
		t.Fatalf("err = %v, %d requests at the other origin", err, len(b.Requests()))
	}

	var asked int
	same := redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/x" {
			http.Redirect(w, r, "/y", http.StatusFound)
			return
		}
		_, _ = io.WriteString(w, "y")
	}))
	own := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { asked++; return http.ErrUseLastResponse }}
	resp, err = httpredirect.Apply(own, httpredirect.Policy{}).Get(same.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if asked != 1 || resp.StatusCode != http.StatusFound {
		t.Fatalf("the caller's CheckRedirect was asked %d times; status %d", asked, resp.StatusCode)
	}
	if httpredirect.Apply(nil, httpredirect.Policy{}).CheckRedirect == nil {
		t.Fatal("Apply(nil) has no policy")
	}
}
