// Package localfile owns the local settings file kept beside a
// configuration file (agenthost.local.yaml): the answers "always" given
// at a terminal's approval question, each loaded as an allow rule; its
// syntax, and how the CLI adds to it and removes from it.
package localfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/glob"
)

// FileName is the local settings file kept beside a configuration
// file: the answers "always" given at a terminal's approval question
// (docs/cli.md, "The REPL"). It is written by the CLI, not by hand.
const FileName = "agenthost.local.yaml"

// RulePrefix starts the id of every rule loaded from a local settings
// file: local/always/SERVER/TOOL.
const RulePrefix = "local/always/"

// maxLocalFile bounds the local settings file read.
const maxLocalFile = 1 << 20

// Settings is a local settings file: each Always entry allows every call of
// one tool, loaded as an allow rule. Rules combine deny > ask > allow and
// the managed policy's rules are evaluated besides them, so an entry never
// lifts a deny or an ask of the configuration or of the managed policy.
type Settings struct {
	// Path is the file ("" when the configuration has no file).
	Path      string `yaml:"-"`
	Approvals Always `yaml:"approvals"`
}

// Always is the approvals section of a local settings file.
type Always struct {
	Always []Entry `yaml:"always"`
}

// Entry is one answer "always": the tool, and when it was given.
type Entry struct {
	Server string    `yaml:"server"`
	Tool   string    `yaml:"tool"`
	At     time.Time `yaml:"at,omitempty"`
}

// RuleID is the id of the entry's rule in decisions and audit records.
func (e Entry) RuleID() string { return RulePrefix + e.Server + "/" + e.Tool }

// Rule is the allow rule the entry loads as: it matches the server and the
// tool by name exactly.
func (e Entry) Rule() rules.Rule {
	return rules.Rule{ID: e.RuleID(), Decide: "allow",
		When: rules.Match{Server: []string{glob.Escape(e.Server)}, Tool: []string{glob.Escape(e.Tool)}}}
}

// Path is the local settings file beside the configuration file
// cfgFile; "" when there is none.
func Path(cfgFile string) string {
	if cfgFile == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(cfgFile), FileName)
}

// Load reads the local settings file at path. A file that does not
// exist is empty settings; one that cannot be read or parsed is an error.
func Load(path string) (*Settings, error) {
	l := &Settings{Path: path}
	if path == "" {
		return l, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, &problem.Error{File: path, Msg: "cannot read local settings: " + document.DescribeReadError(err), Err: err}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLocalFile+1))
	if err != nil {
		return nil, &problem.Error{File: path, Msg: "cannot read local settings: " + document.DescribeReadError(err), Err: err}
	}
	if len(data) > maxLocalFile {
		return nil, &problem.Error{File: path, Msg: fmt.Sprintf("local settings larger than %d bytes", maxLocalFile)}
	}
	parsed, err := Parse(data)
	if err != nil {
		return nil, &problem.Error{File: path, Msg: err.Error(), Err: err}
	}
	parsed.Path = path
	return parsed, nil
}

// Parse parses a local settings file: unknown keys, an entry without
// a server or a tool, and duplicate entries are errors.
func Parse(data []byte) (*Settings, error) {
	l := &Settings{}
	if len(bytes.TrimSpace(data)) == 0 {
		return l, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(l); err != nil {
		return nil, fmt.Errorf("local settings: %w", document.YAMLSyntaxError(err))
	}
	seen := map[string]bool{}
	for i, e := range l.Approvals.Always {
		if e.Server == "" || e.Tool == "" {
			return nil, fmt.Errorf("local settings: approvals.always[%d]: needs a server and a tool", i)
		}
		if seen[e.RuleID()] {
			return nil, fmt.Errorf("local settings: approvals.always[%d]: %s/%s is listed twice", i, e.Server, e.Tool)
		}
		seen[e.RuleID()] = true
	}
	return l, nil
}

// Has reports whether the tool is allowed always.
func (l *Settings) Has(server, tool string) bool {
	return slices.ContainsFunc(l.Approvals.Always, func(e Entry) bool { return e.Server == server && e.Tool == tool })
}

// AddAlways adds an entry for the tool (if it has none) and saves the file.
func (l *Settings) AddAlways(server, tool string, at time.Time) error {
	if l.Has(server, tool) {
		return nil
	}
	l.Approvals.Always = append(l.Approvals.Always, Entry{Server: server, Tool: tool, At: at.UTC().Truncate(time.Second)})
	return l.Save()
}

// Remove removes the entry whose rule id is id and saves the file; it
// reports whether there was one.
func (l *Settings) Remove(id string) (bool, error) {
	i := slices.IndexFunc(l.Approvals.Always, func(e Entry) bool { return e.RuleID() == id })
	if i < 0 {
		return false, nil
	}
	l.Approvals.Always = slices.Delete(l.Approvals.Always, i, i+1)
	return true, l.Save()
}

// Save writes the file (mode 0600) through a temporary file renamed over
// it, so that a reader never sees half a file.
func (l *Settings) Save() error {
	if l.Path == "" {
		return errors.New("no configuration file, so no local settings file beside it")
	}
	data, err := yaml.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode local settings: %w", err)
	}
	data = append([]byte("# Answers \"always\" given at agenthost's approval question: each allows every\n"+
		"# call of one tool (an allow rule; deny and ask rules still win). `/approvals` in\n"+
		"# the REPL lists them and removes one.\n"), data...)
	tmp, err := os.CreateTemp(filepath.Dir(l.Path), ".agenthost.local-*")
	if err != nil {
		return fmt.Errorf("write local settings: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write local settings: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write local settings: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.Path); err != nil {
		return fmt.Errorf("write local settings: %w", err)
	}
	return nil
}
