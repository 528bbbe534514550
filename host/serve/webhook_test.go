package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

// receiver is a webhook receiver written from the documentation only: it
// recomputes the HMAC by hand, rejects stale timestamps and replays.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	fail   int // answer 503 to this many deliveries first
	got    []hookPayload
	seen   map[string]bool
	status []int
	notify chan struct{}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts := r.Header.Get("Agenthost-Webhook-Timestamp")
	sig := r.Header.Get("Agenthost-Webhook-Signature")
	id := r.Header.Get("Agenthost-Webhook-Id")
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	sec, err := strconv.ParseInt(ts, 10, 64)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	defer func() {
		select {
		case rc.notify <- struct{}{}:
		default:
		}
	}()
	switch {
	case !hmac.Equal([]byte(sig), []byte(want)):
		rc.status = append(rc.status, 401)
		w.WriteHeader(401)
		return
	case err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute:
		rc.status = append(rc.status, 400)
		w.WriteHeader(400)
		return
	case rc.fail > 0:
		rc.fail--
		rc.status = append(rc.status, 503)
		w.WriteHeader(503)
		return
	case rc.seen[id]:
		rc.status = append(rc.status, 409)
		w.WriteHeader(409)
		return
	}
	rc.seen[id] = true
	var p hookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.t.Errorf("payload: %v", err)
	}
	rc.got = append(rc.got, p)
	rc.status = append(rc.status, 204)
	w.WriteHeader(204)
}

func TestWebhookSignedAndRetried(t *testing.T) {
	const secret = "hook-secret-canary-77"
	rc := &receiver{t: t, secret: secret, fail: 2, seen: map[string]bool{}, notify: make(chan struct{}, 1)}
	hs := httptest.NewServer(rc)
	defer hs.Close()
	f := newFixture(t, func(c *config.Serve) {
		c.PublicURL = "https://approvals.example"
		c.Webhooks = []config.Webhook{{URL: hs.URL + "/hook", Secret: secret, MaxAttempts: 4}}
	})
	s := f.createSession(map[string]string{"token": "CANARY-hook-value"})
	resp := f.startTurn(s.ID, `say webhooks never read this then call db__delete_rows {"where":"id = 3"}`)
	defer resp.Body.Close()
	p := f.waitPending()
	for {
		rc.mu.Lock()
		n := len(rc.got)
		rc.mu.Unlock()
		if n > 0 {
			break
		}
		<-rc.notify
	}
	rc.mu.Lock()
	got, statuses := rc.got[0], append([]int(nil), rc.status...)
	rc.mu.Unlock()
	if want := []int{503, 503, 204}; !equalInts(statuses, want) {
		t.Errorf("receiver answered %v, want %v (two failures, then the retry verifies)", statuses, want)
	}
	if got.Type != "approval.pending" || got.Approval.ID != p.ID || got.Approval.Tool != "delete_rows" ||
		got.URL != "https://approvals.example/approvals#"+p.ID || len(got.Approval.SecureParams) != 1 {
		t.Errorf("payload = %+v", got)
	}
	// A webhook is no approver: the conversation stays on the page.
	if got.Approval.Conversation != nil || got.Approval.MayVote {
		t.Errorf("the webhook got the conversation: %+v", got.Approval)
	}
	f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"})
	mustSSE(t, resp.Body)
	wantNoCanary(t, f, "CANARY-hook-value")
	wantNoCanary(t, f, secret)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
