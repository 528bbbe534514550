// Package webhook delivers serve's pending approvals to the configured
// webhooks (docs/config.md, "Webhooks"): one bounded queue and worker per
// webhook, each attempt signed afresh (HMAC-SHA256 of the timestamp and
// the body), retried with exponential backoff, redirects within the
// receiver's origin only; and the signature receivers verify.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

// Webhook headers (docs/config.md, "Webhooks"; serve exports them). The
// signature is "sha256=" and the hex HMAC-SHA256, keyed by the webhook's
// secret, of the timestamp header's value, ".", and the raw body.
const (
	HeaderID        = "Agenthost-Webhook-Id"
	HeaderTimestamp = "Agenthost-Webhook-Timestamp"
	HeaderSignature = "Agenthost-Webhook-Signature"
)

// Webhook delivery defaults.
const (
	defaultHookTimeout  = 10 * time.Second
	defaultHookAttempts = 5
	hookBackoffMax      = 60 * time.Second
	// hookQueue bounds the deliveries waiting per webhook; past it new
	// ones are dropped (and logged): approvers still see them on the page.
	hookQueue = 256
)

// Sign returns the signature header value for a webhook body sent at ts.
func Sign(secret []byte, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Errors of VerifySignature.
var (
	ErrBadSignature = errors.New("webhook signature does not match")
	ErrStale        = errors.New("webhook timestamp is outside the accepted window")
)

// VerifySignature checks a delivery as a receiver should (the public
// serve.VerifySignature says how): the timestamp in its one canonical
// decimal spelling within maxAge of now, the signature the HMAC of
// "timestamp.body".
func VerifySignature(secret []byte, timestamp, signature string, body []byte, now time.Time, maxAge time.Duration) error {
	sec, ok := parseTimestamp(timestamp)
	if !ok {
		return fmt.Errorf("%w: not a Unix time in canonical decimal form", ErrStale)
	}
	ts := time.Unix(sec, 0)
	if d := now.Sub(ts); d > maxAge || d < -maxAge {
		return ErrStale
	}
	want := Sign(secret, ts, body)
	if !hmac.Equal([]byte(want), []byte(strings.TrimSpace(signature))) {
		return ErrBadSignature
	}
	return nil
}

// parseTimestamp reads a timestamp header: only the spelling
// strconv.FormatInt gives (digits, "-" before a negative one, no leading
// zero but in "0" itself), so "+TS", "0TS" and other spellings of the same
// second, which strconv.ParseInt accepts, are refused.
func parseTimestamp(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// Notifier delivers pending approvals to the configured webhooks, one
// worker per webhook, retrying with exponential backoff.
type Notifier struct {
	hooks   []*hook
	backoff time.Duration // first retry delay
}

type hook struct {
	cfg    config.Webhook
	queue  chan delivery
	client *http.Client
	logger *slog.Logger
	now    func() time.Time
}

type delivery struct {
	id   string
	body []byte
}

// New starts a worker per webhook of cfgs, counted in wg, until life
// ends; backoff is the first retry delay (0: a second).
func New(life context.Context, wg *sync.WaitGroup, cfgs []config.Webhook, client *http.Client, logger *slog.Logger, backoff time.Duration) *Notifier {
	if backoff <= 0 {
		backoff = time.Second
	}
	n := &Notifier{backoff: backoff}
	for _, c := range cfgs {
		if c.Timeout <= 0 {
			c.Timeout = defaultHookTimeout
		}
		if c.MaxAttempts <= 0 {
			c.MaxAttempts = defaultHookAttempts
		}
		h := &hook{cfg: c, queue: make(chan delivery, hookQueue), client: client, logger: logger, now: time.Now}
		n.hooks = append(n.hooks, h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.run(life, n)
		}()
	}
	return n
}

// Enabled reports whether any webhook is configured.
func (n *Notifier) Enabled() bool { return len(n.hooks) > 0 }

// Notify queues body, the delivery of approval id, for every webhook; a
// webhook whose queue is full loses it (logged: approvers still see the
// approval on the page).
func (n *Notifier) Notify(id string, body []byte) {
	for _, h := range n.hooks {
		select {
		case h.queue <- delivery{id: id, body: body}:
		default:
			h.logger.Warn("serve: webhook queue full; a pending approval was not delivered", "url", redactURL(h.cfg.URL), "approval", id)
		}
	}
}

// DeliverNow delivers body to webhook i at once, retrying as its worker
// does, and returns when the delivery ends (tests).
func (n *Notifier) DeliverNow(ctx context.Context, i int, id string, body []byte) {
	n.hooks[i].deliver(ctx, delivery{id: id, body: body}, n.backoff)
}

func (h *hook) run(ctx context.Context, n *Notifier) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-h.queue:
			h.deliver(ctx, d, n.backoff)
		}
	}
}

// deliver posts d until a 2xx answer, a 4xx other than 408/429 (the
// receiver refuses it; retrying will not help), a redirect to another
// origin (refused, internal/httpredirect), MaxAttempts, or ctx ends.
// Each attempt is signed afresh with its own timestamp.
func (h *hook) deliver(ctx context.Context, d delivery, backoff time.Duration) {
	for attempt := 1; ; attempt++ {
		status, err := h.post(ctx, d)
		switch {
		case err == nil && status/100 == 2:
			return
		case err == nil && status/100 == 4 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
			h.logger.Warn("serve: a webhook receiver refused a delivery", "url", redactURL(h.cfg.URL), "approval", d.id, "status", status)
			return
		case errors.Is(err, httpredirect.ErrRefused):
			// The payload and its signature go to the configured
			// receiver's origin only; asking again gets the same answer.
			h.logger.Warn("serve: a webhook receiver answered a redirect, which was not followed", "url", redactURL(h.cfg.URL), "approval", d.id, "error", err.Error())
			return
		case attempt >= h.cfg.MaxAttempts:
			h.logger.Warn("serve: gave up delivering a webhook", "url", redactURL(h.cfg.URL), "approval", d.id, "attempts", attempt, "status", status, "error", errText(err))
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, hookBackoffMax)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (h *hook) post(ctx context.Context, d delivery) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(d.body))
	if err != nil {
		return 0, errors.New("invalid webhook URL")
	}
	ts := h.now()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agenthost-webhook")
	req.Header.Set(HeaderID, d.id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign([]byte(h.cfg.Secret), ts, d.body))
	resp, err := h.client.Do(req)
	if err != nil {
		var refused *httpredirect.Error
		if errors.As(err, &refused) {
			// It names origins only: no path or query, which may carry
			// a token.
			return 0, refused
		}
		// The error may quote the URL, which may carry a token.
		return 0, errors.New("the receiver could not be reached")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// redactURL keeps a URL's scheme, host and path (no user info or query,
// which may carry tokens).
func redactURL(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			rest = rest[at+1:]
		}
		return scheme + "://" + rest
	}
	return s
}
