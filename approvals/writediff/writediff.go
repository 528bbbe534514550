// Package writediff owns the change a tool call proposes to a file, as its
// approver is shown it: which arguments describe a write (a path with new
// content, as filesystem servers' write_file takes, or a path with edits of
// oldText/newText, as edit_file takes), where a relative path is (the
// server's folder), how much of the file is read and which files are not
// read at all, and the unified diff of the file as it is against what the
// call would write. Presenting it (indenting, escaping) is the caller's.
package writediff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agenthost/agenthost/internal/regularfile"
	"github.com/agenthost/agenthost/internal/textdiff"
)

// MaxFile bounds the file read for a diff; maxFileText is it as the note
// of a larger file says it.
const (
	MaxFile     = 1 << 20
	maxFileText = "1,048,576"
)

// Diff context and length: the lines around each change, and the most
// lines a diff has.
const (
	contextLines = 3
	maxLines     = 200
)

// Diff is what a call would change in a file.
type Diff struct {
	// Path is the file: the call's path, joined to the server's folder
	// when it is relative.
	Path string
	// Unified is the unified diff of the file as it is against the file
	// after the call; "" when Note says why there is none.
	Unified string
	// Note says why no diff is shown: the file could not be read (or is
	// not read: not a regular file, a kernel file, larger than MaxFile),
	// an edit's oldText is not in the file, or the file would not change.
	Note string
}

// Of is the diff a call's arguments would make to a file; ok is false when
// they describe no write (no path, or neither content nor edits, or not a
// JSON object). cwd is the server's folder ("" for none), against which a
// relative path is taken.
func Of(raw json.RawMessage, cwd string) (d Diff, ok bool) {
	var args struct {
		Path     string `json:"path"`
		FilePath string `json:"file_path"`
		Content  *string
		Edits    []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
	}
	if json.Unmarshal(raw, &args) != nil {
		return Diff{}, false
	}
	path := args.Path
	if path == "" {
		path = args.FilePath
	}
	if path == "" || (args.Content == nil && len(args.Edits) == 0) {
		return Diff{}, false
	}
	if !filepath.IsAbs(path) && cwd != "" {
		path = filepath.Join(cwd, path)
	}
	d.Path = path
	old, err := readSmallFile(path)
	if err != nil {
		d.Note = err.Error()
		return d, true
	}
	next := old
	if args.Content != nil {
		next = *args.Content
	} else {
		for _, e := range args.Edits {
			if !strings.Contains(next, e.OldText) {
				d.Note = "an edit's oldText is not in the file as it is now"
				return d, true
			}
			next = strings.Replace(next, e.OldText, e.NewText, 1)
		}
	}
	d.Unified = textdiff.Unified(path+" (now)", path+" (after the call)", old, next, contextLines, maxLines)
	if d.Unified == "" {
		d.Note = "the file would not change"
	}
	return d, true
}

// readSmallFile reads the file a call would write, bounded as
// regularfile.Read bounds it: the path is the model's choice, so a named
// pipe, a device or a huge file must not hang the caller or fill its
// memory, and nothing but a regular file is opened. A file that does not
// exist reads as empty (the call would create it). The path is not
// confined to the server's roots: agenthost does not know them, and the
// diff is shown only to the person answering, never to the model.
func readSmallFile(path string) (string, error) {
	if resolved, err := filepath.EvalSymlinks(path); err == nil && kernelFile(resolved) {
		return "", fmt.Errorf("%s is a kernel file: no diff shown", path)
	}
	data, err := regularfile.Read(path, MaxFile)
	var notRegular *regularfile.NotRegularError
	switch {
	case err == nil:
		return string(data), nil
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case errors.As(err, &notRegular):
		return "", fmt.Errorf("%s is not a regular file (%s): no diff shown", path, regularfile.Kind(notRegular.Mode))
	case errors.Is(err, regularfile.ErrTooLarge):
		return "", fmt.Errorf("the file is larger than %s bytes: no diff shown", maxFileText)
	default:
		return "", fmt.Errorf("cannot read the file: %w", err)
	}
}

// kernelFile reports a path of the kernel's pseudo file systems, whose
// files look regular but report no size, may not end and may block a read.
func kernelFile(path string) bool {
	for _, dir := range []string{"/proc", "/sys", "/dev"} {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}
