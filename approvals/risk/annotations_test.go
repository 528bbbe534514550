package risk

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

func TestParseAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    Annotations
		wantErr bool
	}{
		{name: "empty", raw: ``},
		{name: "null", raw: `null`},
		{name: "not an object", raw: `[1,2]`, wantErr: true},
		{name: "garbage", raw: `{"riskLevel":`, wantErr: true},
		{name: "all fields", raw: `{"title":"Drop","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false,
			"riskLevel":"high","category":"delete","blastRadius":"namespace","reversibility":"manual",
			"sideEffects":["state_loss"],"approvalRecommendation":"single","minTrustLevel":3}`,
			want: Annotations{
				Title: "Drop", ReadOnlyHint: ptr(false), DestructiveHint: ptr(true), IdempotentHint: ptr(true), OpenWorldHint: ptr(false),
				Risk: RawMetadata{RiskLevel: ptr("high"), Category: ptr("delete"), BlastRadius: ptr("namespace"),
					Reversibility: ptr("manual"), SideEffects: []string{"state_loss"}, ApprovalRecommendation: ptr("single"),
					MinTrustLevel: json.RawMessage(`3`)},
			}},
		{name: "wrong types are kept as unknown values", raw: `{"riskLevel":5,"category":null,"blastRadius":{"a":1},"readOnlyHint":"yes","minTrustLevel":"3","sideEffects":"cost","title":7}`,
			want: Annotations{Risk: RawMetadata{RiskLevel: ptr("5"), Category: ptr("null"), BlastRadius: ptr(`{"a":1}`),
				SideEffects: []string{"cost"}, MinTrustLevel: json.RawMessage(`"3"`)}}},
		{name: "side effects keep strings only", raw: `{"sideEffects":["cost",1,null,"downtime"]}`,
			want: Annotations{Risk: RawMetadata{SideEffects: []string{"cost", "downtime"}}}},
		{name: "empty side effects are a declaration", raw: `{"sideEffects":[]}`,
			want: Annotations{Risk: RawMetadata{SideEffects: []string{}}}},
		{name: "keys are case-sensitive", raw: `{"RiskLevel":"low","risklevel":"low"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnnotations(json.RawMessage(tt.raw))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, errAnnotations) {
				t.Errorf("err = %v, want ErrAnnotations", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestNormalizeTrust(t *testing.T) {
	tests := []struct {
		name   string
		in     any
		want   int
		wantOK bool
	}{
		{"3", 3, 3, true},
		{"1", 1, 1, true},
		{"5", 5, 5, true},
		{"0", 0, 5, false},
		{"6", 6, 5, false},
		{"-1", -1, 5, false},
		{"2.5", 2.5, 5, false},
		{"3.0 counts as 3", 3.0, 3, true},
		{`string "3"`, "3", 5, false},
		{"nil", nil, 5, false},
		{"bool", true, 5, false},
		{"NaN", math.NaN(), 5, false},
		{"json 4", json.Number("4"), 4, true},
		{"json 2.5", json.Number("2.5"), 5, false},
		{"raw 2", json.RawMessage(`2`), 2, true},
		{"raw 2.5", json.RawMessage(`2.5`), 5, false},
		{"raw 0", json.RawMessage(`0`), 5, false},
		{"raw 6", json.RawMessage(`6`), 5, false},
		{`raw "3"`, json.RawMessage(`"3"`), 5, false},
		{"raw null", json.RawMessage(`null`), 5, false},
		{"raw 1e0", json.RawMessage(`1e0`), 1, true},
		{"uint64 huge", uint64(math.MaxUint64), 5, false},
		{"int64 4", int64(4), 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NormalizeTrust(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("NormalizeTrust(%#v) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestNormalizeSideEffects(t *testing.T) {
	got := NormalizeSideEffects([]string{" Cost ", "cost", "", "down\x1btime", "state_loss", "\u202e"})
	want := []string{"cost", "downtime", "state_loss"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	if n := len(NormalizeSideEffects(many)); n != maxSideEffects {
		t.Errorf("kept %d side effects, want %d", n, maxSideEffects)
	}
	if got := NormalizeSideEffects(nil); got == nil || len(got) != 0 {
		t.Errorf("NormalizeSideEffects(nil) = %#v, want empty non-nil", got)
	}
}

func TestEffectiveNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   Effective
		want Effective
	}{
		{
			name: "zero value is the fail-closed bucket",
			in:   Effective{},
			want: FailClosed(),
		},
		{
			name: "unknown enums become most restrictive",
			in: Effective{Category: "nuke", RiskLevel: "extreme", BlastRadius: "galaxy", Reversibility: "maybe",
				ApprovalRecommendation: "some", MinTrustLevel: 9, Source: AllSources(SourceDeclared)},
			want: Effective{Category: CategoryDestroy, RiskLevel: RiskCritical, BlastRadius: BlastGlobal, Reversibility: ReversibleNone,
				SideEffects: []string{}, ApprovalRecommendation: ApprovalMulti, MinTrustLevel: 5, Source: AllSources(SourceDeclared)},
		},
		{
			name: "destroy floors riskLevel at high",
			in: Effective{Category: CategoryDestroy, RiskLevel: RiskLow, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceCatalogue)},
			want: Effective{Category: CategoryDestroy, RiskLevel: RiskHigh, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				SideEffects: []string{}, ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceCatalogue)},
		},
		{
			name: "privilege change floors riskLevel at high",
			in: Effective{Category: CategoryMutate, RiskLevel: RiskLow, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				SideEffects: []string{"Privilege_Change"}, ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceDeclared)},
			want: Effective{Category: CategoryMutate, RiskLevel: RiskHigh, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				SideEffects: []string{"privilege_change"}, ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceDeclared)},
		},
		{
			name: "data exfiltration floors riskLevel at high; critical stays",
			in: Effective{Category: CategoryRead, RiskLevel: RiskCritical, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				SideEffects: []string{"data_exfiltration"}, ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceDeclared)},
			want: Effective{Category: CategoryRead, RiskLevel: RiskCritical, BlastRadius: BlastItem, Reversibility: ReversibleAuto,
				SideEffects: []string{"data_exfiltration"}, ApprovalRecommendation: ApprovalNone, MinTrustLevel: 1, Source: AllSources(SourceDeclared)},
		},
		{
			name: "delete floors riskLevel at medium",
			in: Effective{Category: CategoryDelete, RiskLevel: RiskLow, BlastRadius: BlastItem, Reversibility: ReversibleNone,
				ApprovalRecommendation: ApprovalSingle, MinTrustLevel: 2, Source: AllSources(SourceInferred)},
			want: Effective{Category: CategoryDelete, RiskLevel: RiskMedium, BlastRadius: BlastItem, Reversibility: ReversibleNone,
				SideEffects: []string{}, ApprovalRecommendation: ApprovalSingle, MinTrustLevel: 2, Source: AllSources(SourceInferred)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.Normalize()
			got.Notes = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestEffectiveJSONIsTheRiskObject(t *testing.T) {
	e := FailClosed()
	e.Notes = []string{"not part of the object"}
	e.InferenceVersion = InferenceVersion
	e.SideEffects = nil
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"category":"destroy","riskLevel":"critical","blastRadius":"global","reversibility":"none","sideEffects":[],` +
		`"approvalRecommendation":"multi","minTrustLevel":5,"source":{"category":"default","riskLevel":"default",` +
		`"blastRadius":"default","reversibility":"default","sideEffects":"default","approvalRecommendation":"default","minTrustLevel":"default"}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Effective
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(FailClosed(), back); diff != "" {
		t.Errorf("round trip (-want +got)\n%s", diff)
	}
}

func TestValidTrustLevel(t *testing.T) {
	for _, tc := range []struct {
		t    int
		want bool
	}{{-1, false}, {0, false}, {1, true}, {3, true}, {5, true}, {6, false}} {
		if got := ValidTrustLevel(tc.t); got != tc.want {
			t.Errorf("ValidTrustLevel(%d) = %v, want %v", tc.t, got, tc.want)
		}
	}
}
