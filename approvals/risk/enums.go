package risk

import (
	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// Category is the SEP-2793 action category of a tool.
type Category string

// Categories, least to most restrictive.
const (
	CategoryRead    Category = "read"
	CategoryObserve Category = "observe"
	CategoryUtility Category = "utility"
	CategoryMutate  Category = "mutate"
	CategoryDelete  Category = "delete"
	CategoryDestroy Category = "destroy"
)

// RiskLevel is the SEP-2793 graded risk of a tool.
type RiskLevel string

// Risk levels, least to most restrictive.
const (
	RiskLow      RiskLevel = "low"
	RiskMedium   RiskLevel = "medium"
	RiskHigh     RiskLevel = "high"
	RiskCritical RiskLevel = "critical"
)

// BlastRadius is the SEP-2793 scope of an undesired outcome.
type BlastRadius string

// Blast radii, narrowest to widest.
const (
	BlastItem         BlastRadius = "item"
	BlastNamespace    BlastRadius = "namespace"
	BlastCluster      BlastRadius = "cluster"
	BlastOrganization BlastRadius = "organization"
	BlastGlobal       BlastRadius = "global"
)

// Reversibility says whether a tool's effect can be undone.
type Reversibility string

// Reversibility values, least to most restrictive.
const (
	ReversibleAuto   Reversibility = "auto"
	ReversibleManual Reversibility = "manual"
	ReversibleNone   Reversibility = "none"
)

// ApprovalRecommendation is the SEP-2793 advisory approval hint.
type ApprovalRecommendation string

// Approval recommendations, least to most restrictive.
const (
	ApprovalNone   ApprovalRecommendation = "none"
	ApprovalSingle ApprovalRecommendation = "single"
	ApprovalMulti  ApprovalRecommendation = "multi"
)

// Trust levels bound the SEP-2793 1..5 trust ladder. They are the one
// statement of the bounds: configuration validation and the CLI's --trust
// check use them (and ValidTrustLevel).
const (
	MinTrust = 1
	MaxTrust = 5
)

// ValidTrustLevel reports whether t is on the trust ladder (MinTrust to
// MaxTrust).
func ValidTrustLevel(t int) bool { return t >= MinTrust && t <= MaxTrust }

// The orders below define "more restrictive": a later value is riskier.
// Putting utility above observe and below mutate keeps every non-mutating
// category under every mutating one.
var (
	CategoryOrder      = []Category{CategoryRead, CategoryObserve, CategoryUtility, CategoryMutate, CategoryDelete, CategoryDestroy}
	RiskOrder          = []RiskLevel{RiskLow, RiskMedium, RiskHigh, RiskCritical}
	BlastOrder         = []BlastRadius{BlastItem, BlastNamespace, BlastCluster, BlastOrganization, BlastGlobal}
	ReversibilityOrder = []Reversibility{ReversibleAuto, ReversibleManual, ReversibleNone}
	ApprovalOrder      = []ApprovalRecommendation{ApprovalNone, ApprovalSingle, ApprovalMulti}
)

// rank reports c's position from least (0) to most restrictive.
func (c Category) rank() int { return norm.Rank(CategoryOrder, c) }

// Rank reports r's position from least (0) to most restrictive.
func (r RiskLevel) Rank() int { return norm.Rank(RiskOrder, r) }

// Rank reports b's position from narrowest (0) to widest.
func (b BlastRadius) Rank() int { return norm.Rank(BlastOrder, b) }

// minApprovers is the least number of distinct approvers an ask needs under
// this recommendation. "none" still needs one: it only says the operator's
// rules may allow without asking, and an ask with zero approvers would be an
// allow in disguise.
func (a ApprovalRecommendation) minApprovers() int {
	if norm.NormEnum(ApprovalOrder, a) == ApprovalMulti {
		return 2
	}
	return 1
}

// Source says where one effective metadata field came from.
type Source string

// Provenance values, in order of authority.
const (
	SourceCatalogue Source = "catalogue"
	SourceDeclared  Source = "declared"
	SourceInferred  Source = "inferred"
	SourceDefault   Source = "default"
)
