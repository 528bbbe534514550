package config

import (
	"strings"
	"testing"
)

func TestPriceCost(t *testing.T) {
	tests := []struct {
		p                          Price
		prompt, cached, completion int
		want                       float64
	}{
		{Price{Input: 3, Output: 15, CachedInput: 0.3}, 1_000_000, 500_000, 100_000, 1.5 + 0.15 + 1.5},
		{Price{Input: 2}, 1_000_000, 1_000_000, 0, 2}, // cached at the input price without cachedInput
		{Price{Input: 2, Output: 8}, 3000, 0, 150, 0.0072},
		{Price{Input: 1}, 10, 20, 0, 10.0 / 1e6}, // more cached than prompt tokens: capped
	}
	for _, tc := range tests {
		if got := tc.p.Cost(tc.prompt, tc.cached, tc.completion); got < tc.want-1e-12 || got > tc.want+1e-12 {
			t.Errorf("%+v.Cost(%d, %d, %d) = %v, want %v", tc.p, tc.prompt, tc.cached, tc.completion, got, tc.want)
		}
	}
}

func TestPricesValidate(t *testing.T) {
	_, err := Parse([]byte("llm:\n  prices:\n    gpt-4.1: {input: -1, output: 8}\n"), "yaml", "cfg.yaml")
	if err == nil || !strings.Contains(err.Error(), `llm.prices["gpt-4.1"]`) {
		t.Errorf("a negative price: %v", err)
	}
	cfg, err := Parse([]byte("llm:\n  prices:\n    gpt-4.1: {input: 2, output: 8, cachedInput: 0.5}\n"), "yaml", "cfg.yaml")
	if err != nil || cfg.LLM.Prices["gpt-4.1"] != (Price{Input: 2, Output: 8, CachedInput: 0.5}) {
		t.Errorf("prices %+v, %v", cfg, err)
	}
}
