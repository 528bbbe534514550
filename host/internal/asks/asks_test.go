package asks

import (
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
)

// TestApprovalRequestedShowsUnclassified: the approval_requested event of
// an unclassified tool says "unclassified", not the fail-closed bucket's
// "critical"; a level someone declared is shown as it is.
func TestApprovalRequestedShowsUnclassified(t *testing.T) {
	bucket := risk.Effective{RiskLevel: risk.RiskCritical, Unclassified: true}
	bucket.Source.RiskLevel = risk.SourceDefault
	declared := bucket
	declared.RiskLevel, declared.Source.RiskLevel = risk.RiskLow, risk.SourceDeclared
	classified := risk.Effective{RiskLevel: risk.RiskHigh}
	classified.Source.RiskLevel = risk.SourceCatalogue
	for _, tt := range []struct {
		name string
		risk risk.Effective
		want string
	}{
		{"nobody classified it", bucket, "unclassified"},
		{"unclassified, its level declared", declared, "low"},
		{"classified", classified, "high"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := Requested(Call{}, &approvals.Request{Server: "shop", Tool: "mystery", Risk: tt.risk, ID: "apr_1", Approvers: 1})
			if e.RiskLevel != tt.want {
				t.Errorf("riskLevel %q, want %q", e.RiskLevel, tt.want)
			}
		})
	}
}
