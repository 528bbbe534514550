// Package house owns the layout's own tests: the top-level folders the
// design names are the only ones that hold Go code, and every import of
// the module goes down its layers (cmd → host's adapters → host → config →
// {llmview, approvals, bindings, plugins} → internal leaves). It has no
// code; its test reads the module with `go list`.
package house
