package host

import (
	"testing"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/host/internal/auditsink"
	"go.uber.org/goleak"
)

// Every goroutine the host starts has an owner that stops it: after the
// tests (hosts closed, turns cancelled) none may be left.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setAudit replaces the host's audit sink, as New would have set it.
func (h *Host) setAudit(s auditlog.Sink) {
	h.audit = s
	h.record = auditsink.Redacting{Sink: s, Redactor: h.redactor}
}
