package risk

// RawFrom turns effective metadata into a catalogue metadata block with
// every field set (side effects only when there are any).
func RawFrom(e Effective) RawMetadata {
	str := func(s string) *string { return &s }
	m := RawMetadata{
		Category:               str(string(e.Category)),
		RiskLevel:              str(string(e.RiskLevel)),
		BlastRadius:            str(string(e.BlastRadius)),
		Reversibility:          str(string(e.Reversibility)),
		ApprovalRecommendation: str(string(e.ApprovalRecommendation)),
		MinTrustLevel:          e.MinTrustLevel,
	}
	if len(e.SideEffects) > 0 {
		m.SideEffects = append([]string(nil), e.SideEffects...)
	}
	return m
}
