package rules

import (
	"errors"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules/celexpr"
)

// The rules' tests run their expressions on the CEL engine, as the full
// agenthost build registers it.
func init() { UseExprEngine(celexpr.Engine{}) }

// Without a registered engine a configuration with when.expr validates
// (unchecked), and NewPolicy refuses it with ErrNoExprEngine naming the
// rule; one without expressions is not affected.
func TestNoExprEngine(t *testing.T) {
	saved := engine.Load()
	engine.Store(nil)
	t.Cleanup(func() { engine.Store(saved) })
	cfg := Config{Rules: []Rule{{ID: "r", When: Match{Expr: "tool.name == 'x' &&"}, Decide: "allow"}}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate = %v; want nil (left unchecked)", err)
	}
	if _, err := NewPolicy(cfg); !errors.Is(err, ErrNoExprEngine) {
		t.Errorf("NewPolicy = %v; want ErrNoExprEngine", err)
	}
	if _, err := NewPolicy(Config{Rules: []Rule{{ID: "r", When: Match{Tool: []string{"x"}}, Decide: "allow"}}}); err != nil {
		t.Errorf("NewPolicy without expressions = %v", err)
	}
}
