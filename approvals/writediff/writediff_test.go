package writediff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Of: path/content writes and edits of oldText/newText, relative to the
// server's folder; anything else is no write.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	edit := func(old, new string) []map[string]string {
		return []map[string]string{{"oldText": old, "newText": new}}
	}
	for _, tc := range []struct {
		name       string
		raw        json.RawMessage
		cwd        string
		write      bool
		path       string
		diff, note string
	}{
		{"an edit", args(map[string]any{"path": "a.txt", "edits": edit("two", "three")}), dir, true, a, "+three", ""},
		{"two edits in order", args(map[string]any{"path": a, "edits": append(edit("one", "uno"), edit("uno", "eins")...)}), "", true, a, "+eins", ""},
		{"new content", args(map[string]any{"path": a, "content": "one\n"}), "", true, a, "-two", ""},
		{"file_path", args(map[string]any{"file_path": a, "content": "one\ntwo\n"}), "", true, a, "", "the file would not change"},
		{"path wins over file_path", args(map[string]any{"path": "a.txt", "file_path": "/nowhere", "content": "x\n"}), dir, true, a, "+x", ""},
		{"a relative path without a folder", args(map[string]any{"path": "rel.txt", "content": "x\n"}), "", true, "rel.txt", "+x", ""},
		{"a file to create", args(map[string]any{"path": "new.txt", "content": "x\n"}), dir, true, filepath.Join(dir, "new.txt"), "+x", ""},
		{"an edit that does not apply", args(map[string]any{"path": "a.txt", "edits": edit("zzz", "y")}), dir, true, a, "", "an edit's oldText is not in the file as it is now"},
		{"no path", args(map[string]any{"content": "x"}), dir, false, "", "", ""},
		{"no content", args(map[string]any{"path": "a.txt"}), dir, false, "", "", ""},
		{"not an object", json.RawMessage(`["a.txt"]`), dir, false, "", "", ""},
		{"not JSON", json.RawMessage("nope"), dir, false, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Of(tc.raw, tc.cwd)
			if ok != tc.write || d.Path != tc.path || d.Note != tc.note {
				t.Fatalf("Of = %+v, %t; want path %q, note %q, write %t", d, ok, tc.path, tc.note, tc.write)
			}
			if (tc.diff == "") != (d.Unified == "") || !strings.Contains(d.Unified, tc.diff) {
				t.Errorf("diff %q, want %q", d.Unified, tc.diff)
			}
			if d.Unified != "" && !strings.Contains(d.Unified, tc.path+" (after the call)") {
				t.Errorf("the diff does not name the file: %q", d.Unified)
			}
		})
	}
}

// The note of a file too large to read says the bound as MaxFile is.
func TestMaxFileText(t *testing.T) {
	s := strconv.Itoa(MaxFile)
	var b strings.Builder
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	if b.String() != maxFileText {
		t.Errorf("maxFileText %q, MaxFile %s", maxFileText, b.String())
	}
}
