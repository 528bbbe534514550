package risk

// FieldError is one problem in the approvals configuration. Key names the
// setting relative to the approvals section, e.g. "rules[2].decide", so a
// loader can prefix it with the file name and "approvals.".
type FieldError struct {
	Key string
	Msg string
}

// Error returns "key: message".
func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }
