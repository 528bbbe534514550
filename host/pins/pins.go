// Package pins owns pinned tool definitions: the canonical hash of the
// parts of a tool definition a model and an approver rely on (name,
// description, inputSchema, secureInputSchema, annotations), the lock file
// that records them next to the configuration, and the readable diff an
// operator reviews before approving a changed definition.
//
// It knows nothing of servers or the host: the host hands it definitions
// and asks whether each is pinned, changed or new.
package pins

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/internal/atomicfile"
)

// Definition is the pinned part of a tool definition; the JSON values are
// raw, as the server sent them (nil when absent).
type Definition struct {
	Name              string
	Description       string
	InputSchema       json.RawMessage
	SecureInputSchema json.RawMessage
	Annotations       json.RawMessage
}

// canonical is the definition as one JSON object with sorted keys and no
// insignificant whitespace; a part that is not valid JSON is kept as a
// JSON string, so it still hashes (and diffs) stably.
func (d Definition) canonical() []byte {
	doc := map[string]any{
		"name":              d.Name,
		"description":       d.Description,
		"inputSchema":       decodeOrString(d.InputSchema),
		"secureInputSchema": decodeOrString(d.SecureInputSchema),
		"annotations":       decodeOrString(d.Annotations),
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // decoded JSON always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func decodeOrString(raw json.RawMessage) any {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.Decode(new(any)) != io.EOF {
		return string(t)
	}
	return v
}

// Hash is "sha256:<hex>" of the definition's canonical form: equal for
// definitions that differ only in key order or whitespace, different for
// any change of the five parts.
func (d Definition) Hash() string {
	sum := sha256.Sum256(d.canonical())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Entry is one pinned definition: its hash and, for readable diffs, its
// canonical form.
type Entry struct {
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
}

// NewEntry pins d.
func NewEntry(d Definition) Entry {
	return Entry{Hash: d.Hash(), Definition: d.canonical()}
}

// Lock is the lock file's content: per server, per tool, the pinned entry.
type Lock struct {
	Version int                         `json:"version"`
	Servers map[string]map[string]Entry `json:"servers"`
}

// lockVersion is the format this package writes and reads.
const lockVersion = 1

// DefaultFile is the lock file's name, next to the configuration file.
const DefaultFile = "agenthost.lock"

// maxLockBytes bounds the lock file read.
const maxLockBytes = 64 << 20

// ErrBadLock is wrapped by Load for a lock file it cannot use.
var ErrBadLock = errors.New("unusable lock file")

// Load reads the lock file; a missing file is an empty lock (nothing
// pinned yet).
func Load(path string) (*Lock, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Lock{Version: lockVersion, Servers: map[string]map[string]Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pins lock file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLockBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the pins lock file %s: %w", path, err)
	}
	if len(data) > maxLockBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrBadLock, path, maxLockBytes)
	}
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadLock, path, err)
	}
	if l.Version != lockVersion {
		return nil, fmt.Errorf("%w: %s has version %d, this agenthost reads version %d", ErrBadLock, path, l.Version, lockVersion)
	}
	if l.Servers == nil {
		l.Servers = map[string]map[string]Entry{}
	}
	return &l, nil
}

// Save writes the lock file atomically (a temporary file renamed over it),
// indented and with sorted keys, so that it reviews well in version control.
func (l *Lock) Save(path string) error {
	l.Version = lockVersion
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the pins lock file: %w", err)
	}
	data = append(data, '\n')
	// 0644: the lock file holds tool definitions, no secrets, and is meant
	// to be reviewed and kept in version control.
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the pins lock file: %w", err)
	}
	return nil
}

// Status is how a definition stands against the lock.
type Status int

// Statuses.
const (
	// Pinned: the definition is the pinned one.
	Pinned Status = iota
	// Changed: the tool is pinned with another definition.
	Changed
	// New: the tool is not pinned (or its server is not).
	New
)

// Check reports how d, a tool of server, stands against the lock.
func (l *Lock) Check(server string, d Definition) Status {
	e, ok := l.Servers[server][d.Name]
	switch {
	case !ok:
		return New
	case e.Hash == d.Hash():
		return Pinned
	}
	return Changed
}

// Entry returns the pinned entry of a tool.
func (l *Lock) Entry(server, tool string) (Entry, bool) {
	e, ok := l.Servers[server][tool]
	return e, ok
}

// Pin records d as server's pinned definition of its tool.
func (l *Lock) Pin(server string, d Definition) {
	if l.Servers == nil {
		l.Servers = map[string]map[string]Entry{}
	}
	if l.Servers[server] == nil {
		l.Servers[server] = map[string]Entry{}
	}
	l.Servers[server][d.Name] = NewEntry(d)
}

// Diff is a readable line diff of a pinned definition against the current
// one, part by part: each changed part is printed as indented JSON with
// "-" before the pinned lines and "+" before the current ones. An empty
// string means nothing differs.
func Diff(pinned json.RawMessage, current Definition) string {
	var old map[string]json.RawMessage
	_ = json.Unmarshal(pinned, &old) // an unreadable pin diffs as all new
	var cur map[string]json.RawMessage
	_ = json.Unmarshal(current.canonical(), &cur)
	var b strings.Builder
	for _, part := range []string{"name", "description", "inputSchema", "secureInputSchema", "annotations"} {
		a, c := indent(old[part]), indent(cur[part])
		if a == c {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", part)
		writeLineDiff(&b, strings.Split(a, "\n"), strings.Split(c, "\n"))
	}
	return b.String()
}

func indent(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// maxDiffLines bounds the lines compared by the LCS; longer parts are
// shown whole (all old lines removed, all new lines added).
const maxDiffLines = 2000

// writeLineDiff writes a minimal line diff of a and b (longest common
// subsequence), common lines with two spaces of context marker.
func writeLineDiff(w *strings.Builder, a, b []string) {
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		for _, l := range a {
			w.WriteString("    - " + l + "\n")
		}
		for _, l := range b {
			w.WriteString("    + " + l + "\n")
		}
		return
	}
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			w.WriteString("      " + a[i] + "\n")
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			w.WriteString("    - " + a[i] + "\n")
			i++
		default:
			w.WriteString("    + " + b[j] + "\n")
			j++
		}
	}
}

// ServerNames returns the lock's server names, sorted.
func (l *Lock) ServerNames() []string {
	names := make([]string, 0, len(l.Servers))
	for s := range l.Servers {
		names = append(names, s)
	}
	slices.Sort(names)
	return names
}
