package house_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines bounds a package's non-test code: every line of its
// non-test .go files, blank and comment lines included. A package that
// grows past it has more than one job; split it along them.
const maxPackageLines = 3000

// TestPackagesStaySmall fails when a package of the module holds more than
// maxPackageLines lines of non-test Go.
func TestPackagesStaySmall(t *testing.T) {
	lines := map[string]int{}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "../.." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines[filepath.Dir(path)] += bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 20 {
		t.Fatalf("found %d packages; the module has more", len(lines))
	}
	for dir, n := range lines {
		if n > maxPackageLines {
			rel, _ := filepath.Rel("../..", dir)
			t.Errorf("package %s has %d lines of non-test Go (at most %d): split it along its jobs", filepath.ToSlash(rel), n, maxPackageLines)
		}
	}
}
