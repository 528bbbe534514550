package httpredirect_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// builtElsewhere are the files outside this package allowed to build an
// http.Client, with the reason.
var builtElsewhere = map[string]string{
	// The test kit's browser follows the authorization server's redirect
	// to the loopback callback, as a person's browser does.
	"host/oauth/oauthtest/browser.go": "a test browser",
	// The test kit's raw POST to the server under test, for tests of
	// the server's own answers.
	"host/mcptest/internal/client/client.go": "a test kit posting to its own server",
}

// TestEveryClientIsBuiltHere walks the module's sources (tests aside) and
// fails on an HTTP client made without this package: an http.Client
// literal or new(http.Client), or http.DefaultClient and the functions
// that use it (Get, Head, Post, PostForm). Such a client would follow
// every redirect Go's default follows, headers and all.
func TestEveryClientIsBuiltHere(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || name == "testdata" || (strings.HasPrefix(name, ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") ||
			path.Dir(rel) == "internal/httpredirect" || builtElsewhere[rel] != "" {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		for _, at := range clientsBuilt(f) {
			t.Errorf("%s:%d: %s: build HTTP clients with httpredirect.NewClient or Apply (internal/httpredirect)", rel, fset.Position(at.pos).Line, at.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the walk missed the module", checked)
	}
}

type builtAt struct {
	pos  token.Pos
	what string
}

// clientsBuilt finds the HTTP clients f makes without the policy.
func clientsBuilt(f *ast.File) []builtAt {
	httpName := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "net/http" {
			httpName = "http"
			if im.Name != nil {
				httpName = im.Name.Name
			}
		}
	}
	if httpName == "" || httpName == "_" {
		return nil
	}
	isHTTP := func(e ast.Expr, names ...string) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Name != httpName {
			return "", false
		}
		for _, n := range names {
			if sel.Sel.Name == n {
				return n, true
			}
		}
		return "", false
	}
	var out []builtAt
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if _, ok := isHTTP(n.Type, "Client"); ok {
				out = append(out, builtAt{n.Pos(), "an http.Client literal"})
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
				if _, ok := isHTTP(n.Args[0], "Client"); ok {
					out = append(out, builtAt{n.Pos(), "new(http.Client)"})
				}
			}
		case *ast.SelectorExpr:
			if name, ok := isHTTP(n, "DefaultClient", "Get", "Head", "Post", "PostForm"); ok {
				out = append(out, builtAt{n.Pos(), "http." + name})
			}
		}
		return true
	})
	return out
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// The finder itself: each way of making a client is found, under any
// name net/http is imported as; a client from this package is not.
func TestClientsBuiltFinds(t *testing.T) {
	src := `package x
import (
	nh "net/http"
	"github.com/agenthost/agenthost/internal/httpredirect"
)
var a = &nh.Client{}
var b = new(nh.Client)
var c = nh.DefaultClient
func f() { nh.Get("u"); nh.Post("u", "", nil); nh.Head("u"); nh.PostForm("u", nil) }
var ok = httpredirect.NewClient(nil, httpredirect.Policy{})
var typ *nh.Client
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := clientsBuilt(f); len(got) != 7 {
		t.Fatalf("found %d, want 7: %+v", len(got), got)
	}
}
