package secureparams

import "github.com/agenthost/agenthost/host/secureparams/internal/expansion"

// Validation cost limits (internal/expansion owns the analysis). JSON
// Schema validators do not share work between applicators, so a schema of
// a few hundred bytes can cost 2^levels evaluations of one value; the host
// bounds that cost before it validates anything.
const (
	// MaxSchemaExpansion bounds the subschema applications that validating
	// one JSON value may take: the schema graph unfolded through $ref and the
	// in-place applicators, multiplied by how many times the enclosing levels
	// apply a subschema to the same child value, counted for every nesting
	// level of arguments up to MaxArgumentDepth. A schema beyond it excludes
	// its tool (RuleExpansion).
	MaxSchemaExpansion = expansion.MaxSchemaExpansion
	// MaxValidationWork bounds one validation: the JSON values of the
	// instance times the schema's expansion (Tool.ValidationCost). Beyond it
	// the call is refused before the validator runs.
	MaxValidationWork = expansion.MaxValidationWork
)

// RuleExpansion: a schema's subschemas expand beyond MaxSchemaExpansion
// applications to one value. Declared here with the limit it enforces.
const RuleExpansion Rule = "expansion"

// schemaExpansion is expansion.Measure for a schema the scan read, its
// problem as an exclusion.
func schemaExpansion(label string, raw []byte, root any, scan *scanResult) (int64, *problem) {
	cost, p := expansion.Measure(label, raw, root, scan.anchors, scan.refs, scan.fanOut)
	if p != nil {
		return 0, &problem{rule: RuleExpansion, reason: p.Reason}
	}
	return cost, nil
}
