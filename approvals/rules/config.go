package rules

import (
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
)

// Unclassified modes: what a tool gets for fields nobody classified.
//
// Under every mode an unclassified field takes the fail-closed bucket's
// value (FailClosed) for rules and audit. Under "ask" (the default) and
// "infer" a tool with such a field is still offered to the model, and every
// call to it asks one person (never granted for the session); the bucket's
// minTrustLevel does not hide or deny it and its approvalRecommendation
// does not raise the quorum. Under "strict" the bucket applies in full.
const (
	UnclassifiedAsk    = "ask"    // offered; every call asks one person (the default)
	UnclassifiedStrict = "strict" // SEP-2793 fail-closed bucket in full
	UnclassifiedInfer  = "infer"  // the inference heuristic (see Inferrer), then ask
)

// DefaultTimeout is how long an ask waits for approvers when neither the
// rule nor the config sets a timeout.
const DefaultTimeout = 5 * time.Minute

// DefaultMaxApprovers bounds how many distinct approvers a rule may require
// when Config.MaxApprovers is not set.
const DefaultMaxApprovers = 10

// Config is the approvals section of the agenthost configuration.
type Config struct {
	// Unclassified is "ask" (the default), "strict" or "infer"; see
	// UnclassifiedAsk.
	Unclassified string           `json:"unclassified" yaml:"unclassified"`
	Catalogue    []CatalogueEntry `json:"catalogue" yaml:"catalogue"`
	Rules        []Rule           `json:"rules" yaml:"rules"`
	// NoMatch is the decision when no rule matches: allow | ask | deny (default ask).
	NoMatch string        `json:"noMatch" yaml:"noMatch"`
	Timeout time.Duration `json:"timeout" yaml:"timeout"`
	// ExtraVerbs adds inference verbs: category -> verbs.
	ExtraVerbs map[string][]string `json:"extraVerbs" yaml:"extraVerbs"`
	// MaxApprovers is the most distinct approvers that can exist for one
	// call; a rule needing more is a configuration error (0 means
	// DefaultMaxApprovers).
	MaxApprovers int `json:"maxApprovers" yaml:"maxApprovers"`
	// Store is where approval requests and session grants are kept: ""
	// (this process's memory), sqlite:PATH (one node; pending requests
	// survive a restart) or postgres://... (many replicas). ${VAR} is
	// expanded. docs/config.md describes it.
	Store string `json:"store,omitempty" yaml:"store,omitempty"`
}

// CatalogueEntry classifies tools by server and tool-name glob.
type CatalogueEntry struct {
	Server   string           `json:"server" yaml:"server"`
	Tool     string           `json:"tool" yaml:"tool"`
	Metadata risk.RawMetadata `json:"metadata" yaml:"metadata"`
	// Note is a comment rendered above the entry by WriteCatalogueYAML;
	// never read from configuration.
	Note string `json:"-" yaml:"-" mapstructure:"-"`
	// Review marks an entry that `policy init` could not classify from the
	// tool's name ([ReviewNotInferred], [ReviewFromHints]). A YAML config
	// carries the marker in the entry's comment; a JSON config, which has
	// no comments, in this member. The policy never reads it: delete it
	// once the entry is reviewed.
	Review string `json:"review,omitempty" yaml:"-"`
}

// The review markers `policy init` puts on the entries a person must
// classify.
const (
	// ReviewNotInferred: no known verb and no declaration to go by; the
	// entry has the fail-closed risk values.
	ReviewNotInferred = "could not infer: review"
	// ReviewFromHints: no known verb; the entry is the server's own
	// declaration (its SEP-2793 fields or readOnlyHint/destructiveHint).
	ReviewFromHints = "from the server's hints: review"
)

// Rule is one policy rule.
type Rule struct {
	ID        string        `json:"id" yaml:"id"`
	When      Match         `json:"when" yaml:"when"`
	Decide    string        `json:"decide" yaml:"decide"` // allow | ask | deny
	Approvers int           `json:"approvers" yaml:"approvers"`
	Timeout   time.Duration `json:"timeout" yaml:"timeout"`
	Message   string        `json:"message" yaml:"message"`
}

// Match selects calls; every non-empty field must match (AND), values within
// a field are alternatives (OR).
type Match struct {
	Category      []string `json:"category" yaml:"category"`
	RiskLevel     []string `json:"riskLevel" yaml:"riskLevel"`
	BlastRadius   []string `json:"blastRadius" yaml:"blastRadius"`
	Reversibility []string `json:"reversibility" yaml:"reversibility"`
	SideEffects   []string `json:"sideEffects" yaml:"sideEffects"`
	Server        []string `json:"server" yaml:"server"` // globs
	Tool          []string `json:"tool" yaml:"tool"`     // globs
	// MinTrustLevelAbove matches when the tool's minTrustLevel exceeds the
	// session's trust level by at least this much (0 = not used).
	MinTrustLevelAbove int `json:"minTrustLevelAbove" yaml:"minTrustLevelAbove"`
	// ApprovalRecommendation matches the tool's effective recommendation.
	ApprovalRecommendation []string `json:"approvalRecommendation" yaml:"approvalRecommendation"`
	// TrustLevel matches the session's trust level (1..5).
	TrustLevel []int `json:"trustLevel" yaml:"trustLevel"`
	// Expr is a CEL expression over the call (tool, args, session, now)
	// that must be true for the rule to match; it is evaluated only when
	// the other fields match. An expression that fails to evaluate makes
	// the rule match with its most restrictive reading: a deny or ask rule
	// matches as written, an allow rule matches as an ask. docs/config.md
	// lists the variables.
	Expr string `json:"expr,omitempty" yaml:"expr,omitempty"`
}
