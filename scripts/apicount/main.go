// Command apicount prints the number of exported identifiers of each
// non-internal package of the module, and their total: types, functions,
// methods of exported types, methods of exported interfaces, constants and
// variables (struct fields are not counted). Examples, tests, commands,
// internal packages and the bench module are left out.
//
// Usage: go run ./scripts/apicount [-v] [-max N] [module root]
package main

import (
	"flag"
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
	verbose := flag.Bool("v", false, "list the names, not just their count")
	limit := flag.Int("max", 0, "exit 1 if the total is above this (0: no limit)")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	names := map[string][]string{}
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
		pkg := filepath.ToSlash(filepath.Dir(rel))
		names[pkg] = append(names[pkg], exported(f)...)
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	total := 0
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Printf("%-28s %4d\n", pkg, len(names[pkg]))
		total += len(names[pkg])
		if *verbose {
			slices.Sort(names[pkg])
			fmt.Printf("    %s\n", strings.Join(names[pkg], " "))
		}
	}
	fmt.Printf("%-28s %4d\n", "total", total)
	if *limit > 0 && total > *limit {
		fmt.Fprintf(os.Stderr, "apicount: %d exported names, above the limit of %d\n", total, *limit)
		os.Exit(1)
	}
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

// exported lists f's exported top-level names, the exported methods of
// its exported types and those of its exported interfaces.
func exported(f *ast.File) []string {
	var n []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				n = append(n, d.Name.Name)
			} else if receiverExported(d.Recv.List[0].Type) {
				n = append(n, recvName(d.Recv.List[0].Type)+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					n = append(n, s.Name.Name)
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, name := range m.Names {
								if name.IsExported() {
									n = append(n, s.Name.Name+"."+name.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					for _, name := range s.Names {
						if name.IsExported() {
							n = append(n, name.Name)
						}
					}
				}
			}
		}
	}
	return n
}

// recvName is the name of a method's receiver type.
func recvName(t ast.Expr) string {
	switch r := t.(type) {
	case *ast.StarExpr:
		return recvName(r.X)
	case *ast.IndexExpr:
		return recvName(r.X)
	case *ast.IndexListExpr:
		return recvName(r.X)
	case *ast.Ident:
		return r.Name
	}
	return "?"
}

// receiverExported reports whether a method's receiver type is exported.
func receiverExported(t ast.Expr) bool { return ast.IsExported(recvName(t)) }
