package house_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMENamesEveryPackage fails when a package of the module has no
// row in README's layout table: the table is the map a newcomer reads, so
// a package missing from it is a room nobody was told about. A row names a
// package by its path in backquotes (`host/pins/`), several siblings by a
// brace list (`host/internal/{a,b}/`), or a family of them by a pattern
// (`e2e/cmd/*`, `cmd/agenthost/internal/cmd/<noun>/[<verb>/]`).
func TestREADMENamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## Layout")
	if i < 0 {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	layout := text[i:]
	if j := strings.Index(layout[1:], "\n## "); j >= 0 {
		layout = layout[:j+1]
	}
	named := map[string]bool{}
	var families []string
	for _, m := range regexp.MustCompile("`([a-z0-9_./*<>{},\\[\\]-]+)`").FindAllStringSubmatch(layout, -1) {
		name := m[1]
		if open, end := strings.Index(name, "{"), strings.Index(name, "}"); open >= 0 && end > open {
			for _, alt := range strings.Split(name[open+1:end], ",") {
				named[strings.TrimSuffix(name[:open]+alt+name[end+1:], "/")] = true
			}
			continue
		}
		if k := strings.IndexAny(name, "*<["); k >= 0 {
			families = append(families, strings.TrimSuffix(name[:k], "/")+"/")
			continue
		}
		named[strings.TrimSuffix(name, "/")] = true
	}
	for _, p := range modulePackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if rel == "" || named[rel] {
			continue
		}
		covered := false
		for _, f := range families {
			if strings.HasPrefix(rel+"/", f) && rel+"/" != f {
				covered = true
			}
		}
		if !covered {
			t.Errorf("package %s has no row in README's layout table", rel)
		}
	}
}
