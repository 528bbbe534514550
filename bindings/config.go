package bindings

// Binding says which value fills which secure parameter of which tools. It
// is the config file's bindings entry; package config names it
// config.Binding.
type Binding struct {
	Server string                  `json:"server" yaml:"server"` // server name (glob allowed)
	Tools  []string                `json:"tools" yaml:"tools"`   // tool name globs; empty means all
	Params map[string]ParamBinding `json:"params" yaml:"params"` // secure parameter name -> where its value comes from
}

// ParamBinding names exactly one place a secure value comes from.
type ParamBinding struct {
	Value   any    `json:"value,omitempty" yaml:"value,omitempty"`     // literal
	Session string `json:"session,omitempty" yaml:"session,omitempty"` // session value name (--bind NAME=VALUE)
	Env     string `json:"env,omitempty" yaml:"env,omitempty"`         // host environment variable
	File    string `json:"file,omitempty" yaml:"file,omitempty"`       // file contents, trimmed
	Source  string `json:"source,omitempty" yaml:"source,omitempty"`   // configured source name
	Ref     string `json:"ref,omitempty" yaml:"ref,omitempty"`         // reference passed to Source; required with Source
	// Sensitivity overrides the default (secret for env/file/source/session,
	// internal for literal values): public | internal | secret.
	Sensitivity string `json:"sensitivity,omitempty" yaml:"sensitivity,omitempty"`
}

// RefProblem is the one rule for ref, shared by config validation and
// NewBinder: ref is required with source (a source has no sensible default
// reference; the parameter name is not one) and is meaningless without it.
// It returns what is wrong with the ref field, or "" when nothing is.
func (pb ParamBinding) RefProblem() string {
	switch {
	case pb.Ref != "" && pb.Source == "":
		return "is only used with source"
	case pb.Source != "" && pb.Ref == "":
		return "is required with source (the reference passed to the source)"
	}
	return ""
}
