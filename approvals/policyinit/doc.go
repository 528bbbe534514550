// Package policyinit owns the generation of approvals configuration for
// `agenthost policy init` and `policy catalogue`: a plan of catalogue
// entries and starter rules for a set of servers' tools ([PlanInit]), its
// YAML and JSON renderings ([WriteInitYAML], [WriteInitJSON],
// [WriteCatalogueYAML]) and the merges into an existing configuration
// file that keep everything else of it as written ([MergeInitYAML],
// [MergeInitJSON]), and `policy init --write`'s edit of the file itself:
// which files it edits, and that it replaces one only when something was
// added and the result still loads ([WriteInitFile]).
package policyinit
