package proctree

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStaySmall: the supervisor runs from an initializer that Go
// orders after this package's imports, and after every module package
// ready before them (doc.go). An import beyond these (fmt, os/exec,
// path/filepath, x/sys) put some 200 initializers of the agenthost CLI
// before every supervised start.
func TestImportsStaySmall(t *testing.T) {
	allowed := map[string]bool{
		"bytes": true, "errors": true, "os": true, "os/signal": true,
		"runtime": true, "strconv": true, "syscall": true, "time": true,
		"unsafe": true, // no initializer
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[path] {
				t.Errorf("%s imports %s: the supervisor would wait for its initializers (and every package ready before them)", name, path)
			}
		}
	}
}
