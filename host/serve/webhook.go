package serve

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/serve/internal/webhook"
)

// Webhook headers (docs/config.md, "Webhooks"). The signature is
// "sha256=" and the hex HMAC-SHA256, keyed by the webhook's secret, of the
// timestamp header's value, ".", and the raw body.
const (
	HeaderWebhookID        = webhook.HeaderID
	HeaderWebhookTimestamp = webhook.HeaderTimestamp
	HeaderWebhookSignature = webhook.HeaderSignature
)

// Sign returns the signature header value for a webhook body sent at ts.
func Sign(secret []byte, ts time.Time, body []byte) string { return webhook.Sign(secret, ts, body) }

// Errors of VerifySignature.
var (
	ErrBadSignature = webhook.ErrBadSignature
	ErrStale        = webhook.ErrStale
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
	return webhook.VerifySignature(secret, timestamp, signature, body, now, maxAge)
}

// hookPayload is the body of a webhook delivery.
type hookPayload struct {
	Type     string       `json:"type"`
	Approval approvalView `json:"approval"`
	// URL is the approvals page (empty without serve.publicURL).
	URL string `json:"url"`
}

// notifyHooks sends a pending approval to the webhooks.
func (s *Server) notifyHooks(v approvalView) {
	if !s.hooks.Enabled() {
		return
	}
	p := hookPayload{Type: "approval.pending", Approval: v}
	if public := strings.TrimRight(s.cfg.PublicURL, "/"); public != "" {
		p.URL = public + "/approvals#" + v.ID
	}
	body, err := json.Marshal(p)
	if err != nil {
		return
	}
	s.hooks.Notify(v.ID, body)
}
