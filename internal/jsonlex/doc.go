// Package jsonlex owns a small allocation-free JSON tokenizer for input
// already known to be valid JSON (json.Valid accepted it),
// ObjectMembers/Member, the tokenizer's view of an object's top-level
// members, and Valid, json.Valid's verdict at a fraction of its cost. It is a leaf package: it imports only the standard library, so
// both the host's secure-parameter code and the model-facing tool view can
// use it.
package jsonlex
