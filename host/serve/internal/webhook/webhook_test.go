package webhook

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

func TestWebhookGivesUpAndStopsOnRefusal(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		attempts int
	}{
		{"server errors are retried up to maxAttempts", 500, 3},
		{"a refusal is not retried", 401, 1},
		{"too many requests is retried", 429, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				w.WriteHeader(tc.status)
			}))
			defer hs.Close()
			h := &hook{cfg: config.Webhook{URL: hs.URL, Secret: "s", MaxAttempts: 3, Timeout: time.Second}, client: hs.Client(),
				logger: slog.New(slog.DiscardHandler), now: time.Now}
			h.deliver(t.Context(), delivery{id: "apr_1", body: []byte(`{}`)}, time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			if n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

func TestVerifySignature(t *testing.T) {
	secret := []byte("k")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"approval.pending"}`)
	good := Sign(secret, now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	tests := []struct {
		name      string
		ts, sig   string
		body      []byte
		at        time.Time
		wantError error
	}{
		{"valid", ts, good, body, now, nil},
		{"valid within the window", ts, good, body, now.Add(4 * time.Minute), nil},
		{"body changed", ts, good, []byte(`{"type":"x"}`), now, ErrBadSignature},
		{"timestamp changed", strconv.FormatInt(now.Unix()+1, 10), good, body, now, ErrBadSignature},
		{"too old", ts, good, body, now.Add(6 * time.Minute), ErrStale},
		{"from the future", ts, good, body, now.Add(-6 * time.Minute), ErrStale},
		{"not a number", "yesterday", good, body, now, ErrStale},
		// Other spellings of the same second carry the same signature: a
		// replay cache keyed on the header text would miss them.
		{"plus sign", "+" + ts, good, body, now, ErrStale},
		{"leading zero", "0" + ts, good, body, now, ErrStale},
		{"leading zeros", "000" + ts, good, body, now, ErrStale},
		{"surrounding space", " " + ts, good, body, now, ErrStale},
		{"underscores", ts[:1] + "_" + ts[1:], good, body, now, ErrStale},
		{"empty", "", good, body, now, ErrStale},
		{"wrong secret", ts, Sign([]byte("other"), now, body), body, now, ErrBadSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature(secret, tc.ts, tc.sig, tc.body, tc.at, 5*time.Minute)
			if !errors.Is(err, tc.wantError) || (tc.wantError == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.wantError)
			}
		})
	}
}

func FuzzVerifySignature(f *testing.F) {
	f.Add("1800000000", "sha256=00", []byte("{}"))
	f.Add("-1", "", []byte(nil))
	f.Add("99999999999999999999", "sha256=", []byte("x"))
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		now := time.Unix(1_800_000_000, 0)
		err := VerifySignature([]byte("k"), ts, sig, body, now, time.Minute)
		if err == nil && sig != Sign([]byte("k"), time.Unix(mustInt(ts), 0), body) {
			t.Fatalf("accepted a signature that is not the HMAC: %q %q", ts, sig)
		}
		if err == nil && ts != strconv.FormatInt(mustInt(ts), 10) {
			t.Fatalf("accepted timestamp %q, not the spelling Sign signs", ts)
		}
	})
}

// FuzzWebhookTimestamp: the timestamp header parser accepts exactly the
// spellings strconv.FormatInt gives, one per second, and reads them back.
func FuzzWebhookTimestamp(f *testing.F) {
	for _, s := range []string{"1800000000", "+1800000000", "01800000000", "0", "-0", "-1", "00", " 1", "1_0", "9223372036854775807", "9223372036854775808", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseTimestamp(s)
		if ok && strconv.FormatInt(n, 10) != s {
			t.Fatalf("accepted %q as %d, whose canonical spelling is %q", s, n, strconv.FormatInt(n, 10))
		}
		if !ok && n != 0 {
			t.Fatalf("refused %q but returned %d", s, n)
		}
		// Every second's canonical spelling is accepted.
		if m, err := strconv.ParseInt(s, 10, 64); err == nil {
			if back, ok := parseTimestamp(strconv.FormatInt(m, 10)); !ok || back != m {
				t.Fatalf("refused the canonical spelling of %d", m)
			}
		}
	})
}

func mustInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@hooks.example/a?token=x": "https://hooks.example/a",
		"http://h/p#frag":                         "http://h/p",
		"http://h":                                "http://h",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
