// Command apicount prints the number of exported identifiers of each
// non-internal package of the module, and their total: types, functions,
// methods of exported types, methods of exported interfaces, constants and
// variables (struct fields are not counted). Examples, tests, commands,
// internal packages and the bench module are left out.
//
// Usage: go run ./scripts/apicount [module root]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if skip(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		counts[filepath.ToSlash(filepath.Dir(rel))] += exported(f)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	total := 0
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("%-28s %4d\n", pkg, counts[pkg])
		total += counts[pkg]
	}
	fmt.Printf("%-28s %4d\n", "total", total)
}

// skip reports whether the directory rel is left out of the count.
func skip(rel string) bool {
	if rel == "." {
		return false
	}
	base := filepath.Base(rel)
	first := strings.Split(filepath.ToSlash(rel), "/")[0]
	return strings.HasPrefix(base, ".") || base == "testdata" || base == "internal" ||
		first == "examples" || first == "bench" || first == "scripts"
}

// exported counts f's exported top-level names, the exported methods of
// its exported types and those of its exported interfaces.
func exported(f *ast.File) int {
	n := 0
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil || receiverExported(d.Recv.List[0].Type) {
				n++
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					n++
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, name := range m.Names {
								if name.IsExported() {
									n++
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n++
						}
					}
				}
			}
		}
	}
	return n
}

// receiverExported reports whether a method's receiver type is exported.
func receiverExported(t ast.Expr) bool {
	switch r := t.(type) {
	case *ast.StarExpr:
		return receiverExported(r.X)
	case *ast.IndexExpr:
		return receiverExported(r.X)
	case *ast.IndexListExpr:
		return receiverExported(r.X)
	case *ast.Ident:
		return r.IsExported()
	}
	return false
}
