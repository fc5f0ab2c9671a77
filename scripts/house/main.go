// Command house checks the shape of the module's code, as the project's
// rules ask: no non-test file over 800 lines (an algorithm reads top to
// bottom in one or two files: a tick's path is two), no function over 60 lines,
// no type assertion to an interface in package scheduler (a seam found by
// assertion), and imports that follow the layers, bottom to top:
//
//	internal/engine → store → mutex → scheduler, internal/leaks →
//	leakscan, internal/cluster → admin, metrics, internal/fleet →
//	statuspage → redcron → the commands (cmd/...)
//
// It prints every breach and exits 1 if there is one. Examples, tests,
// commands (cmd/ and scripts/) and the bench module are left out of the
// size rules; the commands under cmd/ are in the layers, at the top.
//
// Usage: go run ./scripts/house [module root]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	maxFileLines = 800
	maxFuncLines = 60
	module       = "github.com/redcron/redcron"
)

// layer returns each package's rank: a package may import only packages
// of a lower rank; packages not listed (internal helpers, and the tests'
// ones: redistest, schedulertest, browsertest) are not ranked, but for the
// commands under cmd/, which are all at cmdRank.
func layer() map[string]int {
	return map[string]int{
		"internal/engine": 1, "store": 2, "mutex": 3, "scheduler": 4,
		"internal/leaks": 4, "leakscan": 5, "internal/cluster": 5, "admin": 6, "metrics": 6,
		"internal/fleet": 6, "statuspage": 7, ".": 8,
	}
}

// cmdRank is the rank of every command under cmd/: the top layer.
const cmdRank = 9

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	var breaches []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" ||
				rel == "bench" || rel == "examples" || rel == "scripts") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		breaches = append(breaches, check(path, rel)...)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "house:", err)
		os.Exit(2)
	}
	for _, b := range breaches {
		fmt.Println(b)
	}
	if len(breaches) > 0 {
		os.Exit(1)
	}
	fmt.Println("house: every file, function and import as the rules ask")
}

// check returns the breaches of one file.
func check(path, rel string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return []string{err.Error()}
	}
	pkg := filepath.ToSlash(filepath.Dir(rel))
	if strings.HasPrefix(pkg, "cmd/") {
		return checkImports(f, rel, pkg) // a command: no size rules
	}
	var out []string
	if n := fset.Position(f.End()).Line; n > maxFileLines {
		out = append(out, fmt.Sprintf("%s: %d lines, over %d", rel, n, maxFileLines))
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			out = append(out, fmt.Sprintf("%s: func %s: %d lines, over %d", rel, fd.Name.Name, n, maxFuncLines))
		}
	}
	if pkg == "scheduler" {
		ast.Inspect(f, func(n ast.Node) bool {
			if ta, ok := n.(*ast.TypeAssertExpr); ok && ta.Type != nil && seamType(ta.Type) {
				out = append(out, fmt.Sprintf("%s: type assertion to %s at line %d: the scheduler's seam is Locker and Lease, not optional interfaces or the adapter's type",
					rel, types(ta.Type), fset.Position(ta.Pos()).Line))
			}
			return true
		})
	}
	return append(out, checkImports(f, rel, pkg)...)
}

// checkImports returns the imports of the module's own packages that go up
// or across the layers.
func checkImports(f *ast.File, rel, pkg string) []string {
	ranks := layer()
	rank, ranked := ranks[pkg]
	if strings.HasPrefix(pkg, "cmd/") {
		rank, ranked = cmdRank, true
	}
	if !ranked {
		return nil
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(p, module) {
			continue
		}
		target := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if target == "" {
			target = "."
		}
		if r, ok := ranks[target]; ok && r >= rank {
			out = append(out, fmt.Sprintf("%s: imports %s, which is not below %s in the layers", rel, target, pkg))
		}
	}
	return out
}

// seamType reports whether an asserted type is a locker's or a lease's: an
// interface of the scheduler's (they are all about locking) or a type
// whose name says Locker or Lease.
func seamType(t ast.Expr) bool {
	name := strings.ToLower(types(t))
	return strings.Contains(name, "locker") || strings.Contains(name, "lease") ||
		strings.HasSuffix(name, "er") && !strings.HasPrefix(name, "*")
}

// types returns the source form of a simple type expression.
func types(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return "*" + types(t.X)
	case *ast.SelectorExpr:
		return types(t.X) + "." + t.Sel.Name
	}
	return "?"
}
