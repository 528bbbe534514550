// Package norm owns the small helpers the approvals packages share: text
// normalisation for what reaches a person or the model (one line,
// controls stripped), name tokenising for inference and escalation, the
// canonical JSON form and its hash, JSON appends for the hand-written
// encoders, glob escaping and ordered-enum arithmetic.
package norm
