// Package migrate reads versioned schema migrations (embedded SQL files
// named NNNN_description.sql, applied in order) and holds the rule every
// database store follows at start: apply the migrations newer than the
// database's version, and refuse a database whose version is newer than
// the newest migration this build knows.
package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ErrSchemaTooNew: the database was migrated by a newer agenthost; this
// build must not write to it.
var ErrSchemaTooNew = errors.New("database schema is newer than this agenthost knows")

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads the migrations in dir of fsys, ordered by version. Versions
// must be 1, 2, 3... without gaps.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive version and an underscore", name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions run 1, 2, 3... without gaps)", m.Name, m.Version, i+1)
		}
	}
	return out, nil
}

// Pending returns the migrations to apply to a database at version have,
// or ErrSchemaTooNew when have is beyond the newest of ms.
func Pending(ms []Migration, have int) ([]Migration, error) {
	if have > len(ms) {
		return nil, fmt.Errorf("%w: the database is at schema version %d, this build knows versions up to %d; upgrade agenthost", ErrSchemaTooNew, have, len(ms))
	}
	return ms[have:], nil
}
