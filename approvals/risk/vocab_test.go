package risk

import (
	"slices"
	"testing"
)

func TestResultLabelsOf(t *testing.T) {
	ta := func(m map[string]any) map[string]any { return map[string]any{TrustAnnotationsKey: m} }
	tests := []struct {
		name   string
		eff    Effective
		result map[string]any
		blocks []map[string]any
		want   []ResultLabel
	}{
		{name: "nothing"},
		{name: "result-level untrusted", result: ta(map[string]any{"untrusted": true}),
			want: []ResultLabel{{LabelUntrusted, LabelFromTrustAnnotations}}},
		{name: "false and absent claim nothing", result: ta(map[string]any{"untrusted": false, "sensitive": nil}), want: nil},
		{name: "a block strengthens the result (union)", result: ta(map[string]any{}),
			blocks: []map[string]any{nil, ta(map[string]any{"sensitive": true, "evidenceRef": map[string]any{"type": "data-class.v1"}})},
			want:   []ResultLabel{{LabelSensitive, LabelFromTrustAnnotations}}},
		{name: "a block cannot weaken the result", result: ta(map[string]any{"sensitive": true}),
			blocks: []map[string]any{ta(map[string]any{"sensitive": false})},
			want:   []ResultLabel{{LabelSensitive, LabelFromTrustAnnotations}}},
		{name: "a malformed claim counts", result: ta(map[string]any{"untrusted": "yes"}),
			want: []ResultLabel{{LabelUntrusted, LabelFromTrustAnnotations}}},
		{name: "not an object: nothing", result: map[string]any{TrustAnnotationsKey: "sensitive"}},
		{name: "the tool's declaration labels every result", eff: Effective{ResultLabels: []string{LabelUntrusted}},
			result: ta(map[string]any{"untrusted": true, "sensitive": true}),
			want: []ResultLabel{{LabelSensitive, LabelFromTrustAnnotations}, {LabelUntrusted, LabelFromActionMetadata},
				{LabelUntrusted, LabelFromTrustAnnotations}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResultLabelsOf(tt.eff, tt.result, tt.blocks)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
