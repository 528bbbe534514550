package policyinit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/internal/atomicfile"
)

// ErrNotEditable says a configuration file is of a format the merges do
// not edit (only YAML and JSON: a TOML file, or one of no known
// extension, is merged by hand).
var ErrNotEditable = errors.New("policyinit: only YAML and JSON configuration files are edited")

// EditFormat is the format ("yaml" or "json", as config.Parse names them)
// of the configuration file at path that the merges edit, by its
// extension (.yaml, .yml, .json, in any case); ErrNotEditable for any
// other.
func EditFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".json":
		return "json", nil
	}
	return "", ErrNotEditable
}

// IsJSONFile reports a JSON configuration file (a copied Claude Desktop
// file): the block printed for it is JSON too ([WriteInitJSON]).
func IsJSONFile(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

// WriteStage is the step of [WriteInitFile] that failed.
type WriteStage int

const (
	// StageRead: the file could not be found or read.
	StageRead WriteStage = iota
	// StageMerge: the file's content could not take the plan (the merge's
	// error: not YAML or JSON, an approvals section of another shape).
	StageMerge
	// StageCheck: the merged file would not load; nothing was written.
	StageCheck
	// StageWrite: the merged file could not be written.
	StageWrite
)

// WriteError is a failure of [WriteInitFile]: at which step, for which
// file (links resolved), and why.
type WriteError struct {
	Stage WriteStage
	Path  string
	Err   error
}

func (e *WriteError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// WriteResult is what [WriteInitFile] did.
type WriteResult struct {
	// Path is the file edited: the path given, its links resolved.
	Path string
	// Added is the number of catalogue entries added; RulesAdded says the
	// plan's default rules were added (the file had none).
	Added      int
	RulesAdded bool
	// Changed says the file was replaced; false when it already held
	// everything of the plan (it is then left as it was).
	Changed bool
}

// WriteInitFile merges plan into the YAML or JSON configuration file at
// path ([MergeInitYAML], [MergeInitJSON], by [EditFormat]) and replaces
// the file, with the same mode and atomically, only when something was
// added and the result still loads: check is the configuration's loader
// (config.Parse, given the edited content, its format and path), which
// this package does not link. A link is followed: the file it names is
// edited (in its own format, when its name says one), not replaced by a
// file of its own. A failure is a *WriteError.
func WriteInitFile(path string, plan InitPlan, check func(data []byte, format, path string) error) (WriteResult, error) {
	format, err := EditFormat(path)
	if resolved, rerr := filepath.EvalSymlinks(path); rerr == nil {
		path = resolved
		// The file the link names says its format, when it does.
		if f, ferr := EditFormat(path); ferr == nil {
			format, err = f, nil
		}
	}
	if err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageMerge, Path: path, Err: err}
	}
	info, err := os.Stat(path)
	if err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageRead, Path: path, Err: err}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageRead, Path: path, Err: err}
	}
	merge := MergeInitYAML
	if format == "json" {
		merge = MergeInitJSON
	}
	out, added, rulesAdded, changed, err := merge(data, plan)
	if err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageMerge, Path: path, Err: err}
	}
	res := WriteResult{Path: path, Added: added, RulesAdded: rulesAdded, Changed: changed}
	if !changed {
		return res, nil
	}
	if err := check(out, format, path); err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageCheck, Path: path, Err: err}
	}
	if err := atomicfile.Write(path, out, info.Mode().Perm()); err != nil {
		return WriteResult{Path: path}, &WriteError{Stage: StageWrite, Path: path, Err: err}
	}
	return res, nil
}
