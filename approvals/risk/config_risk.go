package risk

// RawMetadata is SEP-2793 risk metadata as written by a person or a server:
// every field optional, values not yet normalised.
type RawMetadata struct {
	RiskLevel              *string  `json:"riskLevel,omitempty" yaml:"riskLevel,omitempty"`
	Category               *string  `json:"category,omitempty" yaml:"category,omitempty"`
	BlastRadius            *string  `json:"blastRadius,omitempty" yaml:"blastRadius,omitempty"`
	Reversibility          *string  `json:"reversibility,omitempty" yaml:"reversibility,omitempty"`
	SideEffects            []string `json:"sideEffects,omitempty" yaml:"sideEffects,omitempty"`
	ApprovalRecommendation *string  `json:"approvalRecommendation,omitempty" yaml:"approvalRecommendation,omitempty"`
	// MinTrustLevel is kept as raw JSON-ish value: numbers, strings, null all
	// occur in the wild and are normalised later.
	MinTrustLevel any `json:"minTrustLevel,omitempty" yaml:"minTrustLevel,omitempty"`
}
