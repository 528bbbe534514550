// Package risk owns the SEP-2793 risk model of agenthost: the metadata
// enums ([Category], [RiskLevel], [BlastRadius], ...), the effective
// metadata of a tool with per-field provenance ([Effective], [Sources]),
// parsing server-declared annotations, the Tool Annotations working
// group's action-metadata and trust-annotations vocabularies (vocab.go,
// labels.go; source [SourceActionMetadata], [ResultLabelsOf]), the
// fail-closed bucket ([FailClosed]) and inference from a tool's name,
// description and schema ([Inferrer]).
//
// How the sources combine into a tool's effective metadata (catalogue,
// then trusted declarations, then inference, then the fail-closed bucket)
// is the rules package's Policy.Effective.
//
// Decisions where SEP-2793 and the design notes are silent:
//
//   - minTrustLevel must be an integer value in 1..5 (3.0 counts, the
//     string "3" does not); anything else is 5.
//   - Consistency floors raise riskLevel: destroy => high, delete =>
//     medium, data_exfiltration or privilege_change side effects => high.
//     They apply to every source, the catalogue included.
//   - destructiveHint true declares riskLevel high and category mutate;
//     readOnlyHint true (without destructiveHint) declares read, low, auto;
//     both only where the SEP-2793 field is absent, and for untrusted
//     servers only as raises.
//   - action-metadata (vocab.go): for a trusted server it stands in for the
//     SEP-2793 fields left out; for any other each implied value raises
//     only, after the SEP-2793 declaration's raise. Unknown classifier
//     values map to nothing; labels (trust-annotations, returnMetadata) are
//     taken from every server, since they only add caution.
//   - Inference: destroy, drop, purge, truncate and wipe mean
//     destroy/critical; a name with non-ASCII characters or without a known
//     verb is not inferred; single-letter flags (-f, -r) are not risky
//     flags; extra verbs from the config can raise a built-in verb, never
//     lower it.
//     Unset fields are derived from the effective category and risk:
//     reversibility (read/observe/utility auto, mutate manual, delete and
//     destroy none), approvalRecommendation (low none, medium and high
//     single, critical multi), minTrustLevel (low 1, medium 2, high 3,
//     critical 4; 5 is left to the unclassified bucket).
package risk
