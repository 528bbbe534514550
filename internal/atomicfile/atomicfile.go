// Package atomicfile owns replacing a file so that a reader sees either
// the old content or the whole new content, never a part: the token file,
// the pins lock file and a config edited by `policy init --write` are all
// written this way.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file in the same directory
// (so the rename stays on one file system) is given perm, written, synced
// and renamed over path. On any failure path is untouched and the
// temporary file is removed. The error does not contain data.
func Write(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("create a temporary file beside %s: %w", path, err)
	}
	name := tmp.Name()
	defer os.Remove(name) // fails harmlessly once renamed
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("set the mode of %s: %w", name, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", name, path, err)
	}
	return nil
}
