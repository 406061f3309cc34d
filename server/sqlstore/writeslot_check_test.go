package sqlstore

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// slotRoots are the calls on a *Store that take the write slot: the
// transaction, the lone write, the pool as an execer (whose writes are
// lone ones) and the audit committer (whose goroutine waits for the slot
// while the caller waits for it).
var slotRoots = []string{"txOn", "exec", "pool", "audit.Append"}

// dbReads are the uses of a *Store's pool that never write.
var dbReads = map[string]bool{
	"db.QueryRowContext": true, "db.QueryContext": true, "db.PrepareContext": true,
	"db.PingContext": true, "db.Close": true, "db.Stats": true,
}

// writesInsideTransactions returns where a function literal given to a
// method of *Store that takes the write slot (inTx's callback, say) calls
// a method of the same *Store that takes it too, directly or through
// other methods: that call would wait for the slot its caller holds. It
// also returns where a method writes through s.db itself, bypassing the
// slot. Methods are matched by name on their receiver's variable.
func writesInsideTransactions(fset *token.FileSet, files []*ast.File) []string {
	type method struct {
		recv  string
		decl  *ast.FuncDecl
		calls []string // what it calls on its receiver: "tx", "audit.Append"…
	}
	methods := map[string]*method{}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok || fmt.Sprint(star.X) != "Store" {
				continue
			}
			m := &method{recv: fd.Recv.List[0].Names[0].Name, decl: fd}
			m.calls = receiverCalls(fd.Body, m.recv)
			methods[fd.Name.Name] = m
		}
	}
	// takes reports whether calling name on the receiver takes the slot.
	takes := map[string]bool{}
	for _, r := range slotRoots {
		takes[r] = true
	}
	for changed := true; changed; {
		changed = false
		for name, m := range methods {
			if !takes[name] && slices.ContainsFunc(m.calls, func(c string) bool { return takes[c] }) {
				takes[name], changed = true, true
			}
		}
	}
	var out []string
	for name, m := range methods {
		reads := map[ast.Expr]bool{} // recv.db in recv.db.QueryContext…
		ast.Inspect(m.decl.Body, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				switch p := selectorPath(sel, m.recv); {
				case dbReads[p]:
					reads[sel.X] = true
				case p == "db" && !reads[sel] && name != "exec" && name != "txOn":
					out = append(out, fmt.Sprintf("%s: %s writes past the write slot (use exec, inTx or pool)", fset.Position(sel.Pos()), name))
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			callee := selectorPath(call.Fun, m.recv)
			if !takes[callee] {
				return true
			}
			for _, arg := range call.Args {
				lit, ok := arg.(*ast.FuncLit)
				if !ok {
					continue
				}
				for _, inner := range receiverCallExprs(lit.Body, m.recv) {
					if c := selectorPath(inner.Fun, m.recv); takes[c] {
						out = append(out, fmt.Sprintf("%s: %s calls %s inside the transaction of %s", fset.Position(inner.Pos()), name, c, callee))
					}
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

// receiverCalls returns the paths of the calls on recv in body.
func receiverCalls(body ast.Node, recv string) []string {
	var out []string
	for _, c := range receiverCallExprs(body, recv) {
		out = append(out, selectorPath(c.Fun, recv))
	}
	return out
}

// receiverCallExprs returns the calls on recv in body.
func receiverCallExprs(body ast.Node, recv string) []*ast.CallExpr {
	var out []*ast.CallExpr
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && selectorPath(c.Fun, recv) != "" {
			out = append(out, c)
		}
		return true
	})
	return out
}

// selectorPath returns "a.b" for the expression recv.a.b, else "".
func selectorPath(e ast.Expr, recv string) string {
	var parts []string
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			parts = append(parts, x.Sel.Name)
			e = x.X
			continue
		case *ast.Ident:
			if x.Name != recv || len(parts) == 0 {
				return ""
			}
			slices.Reverse(parts)
			return strings.Join(parts, ".")
		}
		return ""
	}
}

// TestNoWriteInsideATransaction checks the package's code: no method
// writes inside another write's transaction (it would wait for the write
// slot until its context ends) and none writes past the slot.
func TestNoWriteInsideATransaction(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) < 10 {
		t.Fatalf("parsed %d files; want the package's", len(files))
	}
	if got := writesInsideTransactions(fset, files); len(got) != 0 {
		t.Errorf("writes that would wait for the write slot their caller holds, or bypass it:\n%s", strings.Join(got, "\n"))
	}
}

// TestWritesInsideTransactions checks that the check finds what it is for.
func TestWritesInsideTransactions(t *testing.T) {
	const header = `package sqlstore
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error { return s.txOn(ctx, ctx, fn) }
func (s *Store) txOn(ctx, txCtx context.Context, fn func(*sql.Tx) error) error { return s.db.BeginTx(txCtx, nil) }
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error { return s.tx(ctx, fn) }
func (s *Store) exec(ctx context.Context, q string) error { _, err := s.db.ExecContext(ctx, q); return err }
func (s *Store) Write(ctx context.Context) error { return s.exec(ctx, "") }
func (s *Store) Read(ctx context.Context) error { return s.db.QueryRowContext(ctx, "").Err() }
func (s *Store) Append(ctx context.Context) error { return s.audit.Append(ctx, nil) }
`
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"clean", `func (s *Store) Update(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { s.Read(ctx); _, err := tx.ExecContext(ctx, ""); return err })
}`, nil},
		{"a lone write inside", `func (s *Store) Update(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.Write(ctx) })
}`, []string{"x.go:11:53: Update calls Write inside the transaction of inTx"}},
		{
			"a transaction inside, through a method", `func (st *Store) Update(ctx context.Context) error {
	return st.inTx(ctx, func(tx *sql.Tx) error { return st.Outer(ctx) })
}
func (st *Store) Outer(ctx context.Context) error { return st.inTx(ctx, nil) }`,
			[]string{"x.go:11:54: Update calls Outer inside the transaction of inTx"},
		},
		{"an audit append inside", `func (s *Store) Update(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.Append(ctx) })
}`, []string{"x.go:11:53: Update calls Append inside the transaction of inTx"}},
		{"a write past the slot", `func (s *Store) Update(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "")
	return err
}`, []string{"x.go:11:12: Update writes past the write slot (use exec, inTx or pool)"}},
		{"the pool handed on", `func (s *Store) Update(ctx context.Context) error {
	return insert(ctx, s.db)
}`, []string{"x.go:11:21: Update writes past the write slot (use exec, inTx or pool)"}},
		{"the slot's pool inside", `func (s *Store) Update(ctx context.Context) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return insert(ctx, s.pool()) })
}`, []string{"x.go:11:65: Update calls pool inside the transaction of inTx"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", header+"\n"+tc.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, writesInsideTransactions(fset, []*ast.File{f})); diff != "" {
				t.Errorf("writesInsideTransactions (-want +got):\n%s", diff)
			}
		})
	}
}
