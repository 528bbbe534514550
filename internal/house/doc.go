// Package house owns the layout's own tests: the top-level folders the
// design names are the only ones that hold Go code, and every import of
// the module goes down its layers (cmd → host's adapters → host → config →
// {llmview, approvals, bindings, plugins} → internal leaves), no package
// holds more than 3,000 lines of non-test Go, and README's layout table
// names every package. It has no code; its tests read the module with
// `go list` and its files.
package house
