package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/boxkite/boxkite/server/internal/authz"
)

// storesWithoutWrapper are the subsystems whose own store has no
// authorization wrapper yet, with what authorizes their calls instead
// (docs/architecture.md, "Authorization"). TestSubsystemStoresAuthorized
// fails for any other store without one, and for a row here whose
// package has gained one.
var storesWithoutWrapper = map[string]string{
	"orgs":        "the service checks the caller's membership and role (access) before each call",
	"storagesync": "keyed by the sandbox its routes load for the caller; the worker acts as the system",
}

// TestSubsystemStoresAuthorized: every store interface a package under
// server/ declares (a type named Store or ending in Store) is either a
// view of model.Store, every method of it one *authz.Store wraps (the
// server hands the subsystem the wrapped store), or a store of the
// subsystem's own whose package tests its wrapper (TestStoreAuthorized,
// with server/internal/authz/authztest). A new subsystem store, or a
// method added to a view that model.Store lacks, fails here until it is
// authorized.
func TestSubsystemStoresAuthorized(t *testing.T) {
	wrapped := reflect.TypeFor[*authz.Store]()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch d.Name() {
		case "testdata", "node_modules", "dist":
			return fs.SkipDir
		}
		switch dir {
		case "model", "sqlstore", "internal/authz":
			// model.Store is internal/authz's TestStoreAuthorized's; the
			// SQL store implements the stores, declares none.
			return nil
		}
		stores, tested := storeInterfaces(t, dir)
		for name, methods := range stores {
			var missing []string
			for _, m := range methods {
				if _, ok := wrapped.MethodByName(m); !ok {
					missing = append(missing, m)
				}
			}
			if len(missing) == 0 {
				continue // a view of model.Store, behind authz.Store
			}
			if _, ok := storesWithoutWrapper[dir]; ok {
				seen[dir] = true
				if tested {
					t.Errorf("server/%s tests its store's authorization now: remove it from storesWithoutWrapper", dir)
				}
				continue
			}
			if !tested {
				t.Errorf("server/%s declares %s, whose methods %v authz.Store does not wrap, and has no TestStoreAuthorized: wrap it (authz.ActsFor, authz.IsSystem) and test each method's rule with authztest", dir, name, missing)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range storesWithoutWrapper {
		if !seen[dir] {
			t.Errorf("storesWithoutWrapper names server/%s, which declares no store of its own", dir)
		}
	}
}

// storeInterfaces returns the interfaces named Store or …Store that the
// package in dir declares, each with its methods' names (embedded
// interfaces aside), and whether its tests declare TestStoreAuthorized.
func storeInterfaces(t *testing.T, dir string) (stores map[string][]string, tested bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	stores = map[string][]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if decl.Recv == nil && decl.Name.Name == "TestStoreAuthorized" && strings.HasSuffix(path, "_test.go") {
					tested = true
				}
			case *ast.GenDecl:
				if strings.HasSuffix(path, "_test.go") {
					continue
				}
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Store") {
						continue
					}
					it, ok := ts.Type.(*ast.InterfaceType)
					if !ok {
						continue
					}
					var methods []string
					for _, m := range it.Methods.List {
						for _, n := range m.Names {
							methods = append(methods, n.Name)
						}
					}
					stores[ts.Name.Name] = methods
				}
			}
		}
	}
	return stores, tested
}
