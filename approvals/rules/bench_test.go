package rules

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
)

func BenchmarkEffective(b *testing.B) {
	cfg := contractConfig()
	cfg.Unclassified = UnclassifiedInfer
	p := mustPolicy(b, cfg)
	tool := risk.ToolInfo{Name: "delete_pod", Description: "Deletes a pod permanently.", InputSchema: risktest.Schema("namespace", "name", "force"),
		Annotations: json.RawMessage(`{"riskLevel":"low","destructiveHint":true}`)}
	b.ReportAllocs()
	for b.Loop() {
		p.Effective("k8s", false, tool)
	}
}

func BenchmarkDecide(b *testing.B) {
	p := mustPolicy(b, contractConfig())
	risk := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalSingle, 2).Normalize()
	call := Call{Server: "orders", Tool: "update_order", Args: json.RawMessage(`{"id":"42","namespace":"shop","force":false}`), TrustLevel: 3}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(risk, call)
	}
}

// BenchmarkEscalate is the per-call escalator check on typical arguments.
func BenchmarkEscalate(b *testing.B) {
	base := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalSingle, 2).Normalize()
	args := json.RawMessage(`{"query":"SELECT id FROM orders WHERE status = 'open'","limit":50,"options":{"explain":false,"instances":["a","b"]}}`)
	b.Run("unchecked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			escalate(base, args, ArgsCheck{})
		}
	})
	// checked: as Decide runs it on a call whose path checked the
	// arguments once already (Call.ArgsCheck).
	checked := CheckArgs(args)
	b.Run("checked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			escalate(base, args, checked)
		}
	})
}
