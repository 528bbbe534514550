// Package rules owns the approvals policy of agenthost: its configuration
// ([Config], [Rule], [Match], [CatalogueEntry]), validation ([FieldError]
// comes from the risk model), the effective metadata of a tool
// ([Policy.Effective]: operator catalogue, then trusted declarations, then
// inference, then the fail-closed bucket; untrusted declarations may only
// raise risk), rules combined deny > ask > allow with trust gating and CEL
// expressions (expr.go), call-time escalators that only raise
// ([Policy.Decide], [Policy.NeverAllowed]), managed policy ([Managed]),
// the explanation of a decision ([Policy.Explain]) and an inferred,
// reviewable catalogue ([Policy.Catalogue]). The vocabulary of a decision
// ([Action], [Outcome], [ReasonClass]) lives here, since rules are its
// first speaker.
//
// Decisions where SEP-2793 and the design notes are silent:
//
//   - Catalogue entries: the first entry (in config order) whose server and
//     tool globs match wins; fields it leaves out fall through. Globs: *
//     (any run, including / and .), ?, [a-z], [!a-z], backslash escapes.
//   - An ask needs max(matching ask rules' approvers, 1 for none/single or 2
//     for multi) distinct approvers, capped by maxApprovers (default 10);
//     its timeout is the shortest among the matching ask rules, else
//     approvals.timeout, else 5 minutes.
package rules
