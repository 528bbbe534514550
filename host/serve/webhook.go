package serve

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// Webhook headers (docs/config.md, "Webhooks"). The signature is
// "sha256=" and the hex HMAC-SHA256, keyed by the webhook's secret, of the
// timestamp header's value, ".", and the raw body.
const (
	HeaderWebhookID        = "Agenthost-Webhook-Id"
	HeaderWebhookTimestamp = "Agenthost-Webhook-Timestamp"
	HeaderWebhookSignature = "Agenthost-Webhook-Signature"
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

// VerifySignature checks a delivery as a receiver should: the timestamp
// header is a Unix time in its one canonical decimal spelling (what Sign
// signs: no sign, no leading zero, no space) within maxAge of now (either
// side), and the signature header is the HMAC of "timestamp.body".
// Receivers should also remember the ids (Agenthost-Webhook-Id plus the
// timestamp header) they accepted within maxAge and refuse a repeat:
// together that makes a captured delivery unusable. Because only one
// spelling of a time verifies, a replay cache keyed on the header text
// sees every repeat.
func VerifySignature(secret []byte, timestamp, signature string, body []byte, now time.Time, maxAge time.Duration) error {
	sec, ok := parseWebhookTimestamp(timestamp)
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

// parseWebhookTimestamp reads a timestamp header: only the spelling
// strconv.FormatInt gives (digits, "-" before a negative one, no leading
// zero but in "0" itself), so "+TS", "0TS" and other spellings of the same
// second, which strconv.ParseInt accepts, are refused.
func parseWebhookTimestamp(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// hookPayload is the body of a webhook delivery.
type hookPayload struct {
	Type     string       `json:"type"`
	Approval approvalView `json:"approval"`
	// URL is the approvals page (empty without serve.publicURL).
	URL string `json:"url"`
}

// notifier delivers pending approvals to the configured webhooks, one
// worker per webhook, retrying with exponential backoff.
type notifier struct {
	hooks   []*hook
	public  string
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

func newNotifier(life context.Context, wg *sync.WaitGroup, cfgs []config.Webhook, public string, client *http.Client, logger *slog.Logger, backoff time.Duration) *notifier {
	if backoff <= 0 {
		backoff = time.Second
	}
	n := &notifier{public: strings.TrimRight(public, "/"), backoff: backoff}
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

func (n *notifier) notify(v approvalView) {
	if len(n.hooks) == 0 {
		return
	}
	p := hookPayload{Type: "approval.pending", Approval: v}
	if n.public != "" {
		p.URL = n.public + "/approvals#" + v.ID
	}
	body, err := json.Marshal(p)
	if err != nil {
		return
	}
	for _, h := range n.hooks {
		select {
		case h.queue <- delivery{id: v.ID, body: body}:
		default:
			h.logger.Warn("serve: webhook queue full; a pending approval was not delivered", "url", redactURL(h.cfg.URL), "approval", v.ID)
		}
	}
}

func (h *hook) run(ctx context.Context, n *notifier) {
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
	req.Header.Set(HeaderWebhookID, d.id)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderWebhookSignature, Sign([]byte(h.cfg.Secret), ts, d.body))
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
