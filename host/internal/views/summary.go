package views

import "github.com/agenthost/agenthost/host/internal/mcpconn"

// ViewSummary counts a session's tools by status, with the most common
// reason a tool is not offered.
type ViewSummary struct {
	Active, Hidden, Excluded int
	// TopReason is the most common reason among hidden and excluded tools
	// ("" when every tool is active); TopReasonCount tools share it.
	TopReason      string
	TopReasonCount int
}

// Summary counts the view's tools (every server) by status.
func (v *SessionView) Summary() ViewSummary {
	var sum ViewSummary
	reasons := map[string]int{}
	for _, snap := range v.Servers {
		for _, tv := range v.Tools[snap.Name] {
			switch tv.Status {
			case mcpconn.ToolActive:
				sum.Active++
				continue
			case mcpconn.ToolHidden:
				sum.Hidden++
			default:
				sum.Excluded++
			}
			reasons[tv.Reason]++
		}
	}
	for _, snap := range v.Servers {
		// In listing order, so that ties resolve the same way every time.
		for _, tv := range v.Tools[snap.Name] {
			if n := reasons[tv.Reason]; tv.Status != mcpconn.ToolActive && n > sum.TopReasonCount {
				sum.TopReason, sum.TopReasonCount = tv.Reason, n
			}
		}
	}
	return sum
}
