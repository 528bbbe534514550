package config

import "github.com/agenthost/agenthost/config/internal/localfile"

// LocalFileName is the local settings file kept beside a configuration
// file: the answers "always" given at a terminal's approval question
// (docs/cli.md, "The REPL"). It is written by the CLI, not by hand.
const LocalFileName = localfile.FileName

// LocalRulePrefix starts the id of every rule loaded from a local settings
// file: local/always/SERVER/TOOL.
const LocalRulePrefix = localfile.RulePrefix

// Local is a local settings file: each Always entry allows every call of
// one tool, loaded as an allow rule that never lifts a deny or an ask of
// the configuration or of the managed policy. Has, AddAlways, Remove and
// Save read and write it (mode 0600, replaced whole).
type Local = localfile.Settings

// LocalAlways is the approvals section of a local settings file.
type LocalAlways = localfile.Always

// AlwaysEntry is one answer "always": the tool, and when it was given;
// RuleID and Rule are the allow rule it loads as.
type AlwaysEntry = localfile.Entry

// LocalPath is the local settings file beside the configuration file
// cfgFile; "" when there is none.
func LocalPath(cfgFile string) string { return localfile.Path(cfgFile) }

// LoadLocal reads the local settings file at path. A file that does not
// exist is empty settings; one that cannot be read or parsed is an error.
func LoadLocal(path string) (*Local, error) { return localfile.Load(path) }

// ParseLocal parses a local settings file: unknown keys, an entry without
// a server or a tool, and duplicate entries are errors.
func ParseLocal(data []byte) (*Local, error) { return localfile.Parse(data) }

// applyLocal loads the local settings beside the configuration file and
// appends its entries to the approvals rules; Local stays nil when there
// are none.
func (c *Config) applyLocal() error {
	l, err := LoadLocal(LocalPath(c.File))
	if err != nil {
		return err
	}
	if len(l.Approvals.Always) == 0 {
		return nil
	}
	c.Local = l
	for _, e := range l.Approvals.Always {
		c.Approvals.Rules = append(c.Approvals.Rules, e.Rule())
	}
	return nil
}
