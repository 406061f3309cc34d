package authz_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/boxkite/boxkite/server/internal/authz"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/model"
)

// rules is every model.Store method's authorization, as store.go should
// implement it; TestStoreAuthorized checks each against the wrapper. A new
// Store method fails the test until it has a wrapper and a row here.
var rules = map[string]string{
	"AccountByID": "account", "AllowedCommands": "account", "SetAllowedCommands": "account",
	"SetKeepOutputSecrets": "account", "ListAPIKeys": "account", "RevokeAPIKey": "account",
	"ListSSHKeys": "account", "DeleteSSHKey": "account", "ListSandboxes": "account", "ListSandboxPage": "account",
	"ListVolumes": "account", "Volume": "account", "DeleteVolume": "account",
	"MCPConnections": "account", "DeleteMCPConnection": "account", "Recording": "account",
	"Sandbox": "account", "Usage": "account", "ReserveSandboxes": "account",
	"ListSnapshots": "account", "Snapshot": "account",

	"CreateAPIKey": "record", "CreateSandbox": "record", "CreateVolume": "record",
	"CreateMCPConnection": "record", "CreateSSHKey": "record", "SaveRecording": "record",
	"AppendExecLog": "record", "ReserveSnapshot": "record",

	"SandboxByID": "result",

	"UpdateSandbox": "update", "UpdateSnapshot": "update", "FinishSnapshot": "update",

	"SandboxesWithStatus": "system", "ExpiredSandboxes": "system", "PurgeIdempotencyKeys": "system",
	"SnapshotsWithStatus": "system", "EnsureAccountKey": "system", "CreateAccount": "system",
	"AccountByEmail": "system", "SSHKeyByFingerprint": "system",

	"AttachVolumes": "scoped", "DeleteSandbox": "scoped", "ExecLog": "scoped", "ExecLogAfter": "scoped",
	"ExecLogHead": "scoped", "ExecLogSeq": "scoped", "SandboxEgress": "scoped", "SetSandboxEgress": "scoped",
	"SandboxImageID": "scoped", "ClaimIdempotencyKey": "scoped", "CompleteIdempotencyKey": "scoped",
	"ReleaseIdempotencyKey": "scoped", "ClaimSnapshotKey": "scoped",
	"BeginSnapshotDrop": "scoped", "EndSnapshotDrop": "scoped", "TakeSandboxLease": "scoped", "ReleaseSandboxLease": "scoped",

	"APIKeyByHash": "open", "TouchAPIKey": "open", "PasswordHash": "open", "CreateAccountWithPassword": "open",
	"EnsureSetting": "open", "Ping": "open", "Close": "open", "SpendToken": "open",
	"RevokedCredentials": "open", "APIKeyRole": "open", "KeyDemotions": "open", "CountActiveSandboxes": "open",
	"BeatInstance": "open", "EndInstance": "open", "LiveInstances": "open", "ForgetInstances": "open",
}

// inner panics for every method (the wrapper let the call through) but
// the few whose check looks at what the store found.
type inner struct {
	model.Store // nil: calling it panics, recovered as "reached"
	owner       string
}

func (s inner) SandboxByID(context.Context, string) (*model.Sandbox, error) {
	return &model.Sandbox{ID: "sb", AccountID: s.owner}, nil
}

func (s inner) UpdateSandbox(_ context.Context, _ string, fn func(*model.Sandbox) error) (*model.Sandbox, error) {
	sb := &model.Sandbox{ID: "sb", AccountID: s.owner}
	return sb, fn(sb)
}

func (s inner) UpdateSnapshot(_ context.Context, _ string, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	sn := &model.Snapshot{ID: "sn", AccountID: s.owner}
	return sn, fn(sn)
}

func (s inner) FinishSnapshot(ctx context.Context, id string, _ time.Time, fn func(*model.Snapshot) error) (*model.Snapshot, error) {
	return s.UpdateSnapshot(ctx, id, fn)
}

// call calls method on st as ctx's actor, with the account id arguments
// (and the AccountID of record arguments) set to acct, and reports
// whether it reached the inner store and the error the wrapper returned.
func call(t *testing.T, st *authz.Store, method string, ctx context.Context, acct string) (got bool, err error) {
	t.Helper()
	m := reflect.ValueOf(st).MethodByName(method)
	if !m.IsValid() {
		t.Fatalf("authz.Store has no method %s", method)
	}
	typ := m.Type()
	args := make([]reflect.Value, typ.NumIn())
	firstString := true
	for i := range args {
		pt := typ.In(i)
		v := reflect.New(pt).Elem()
		switch {
		case pt == reflect.TypeFor[context.Context]():
			v = reflect.ValueOf(&ctx).Elem()
		case pt.Kind() == reflect.String:
			if firstString {
				v.SetString(acct)
				firstString = false
			} else {
				v.SetString("id")
			}
		case pt.Kind() == reflect.Func && pt.NumIn() == 1 && pt.In(0).Kind() == reflect.Pointer:
			v = reflect.MakeFunc(pt, func([]reflect.Value) []reflect.Value {
				got = true
				return []reflect.Value{reflect.Zero(pt.Out(0))}
			})
		case pt.Kind() == reflect.Pointer && pt.Elem().Kind() == reflect.Struct:
			v = reflect.New(pt.Elem())
			if f := v.Elem().FieldByName("AccountID"); f.IsValid() {
				f.SetString(acct)
			}
		}
		args[i] = v
	}
	defer func() {
		if p := recover(); p != nil {
			got = true
		}
	}()
	out := m.Call(args)
	if last := out[len(out)-1]; !last.IsNil() {
		err = last.Interface().(error)
	}
	if method == "SandboxByID" && err == nil {
		got = true
	}
	return got, err
}

// asCaller is a request context whose caller is the account id.
func asCaller(id string) context.Context {
	ctx := httpx.WithInfo(context.Background(), &httpx.Info{ID: "req"})
	authz.From(ctx).Account = &model.Account{ID: id}
	return ctx
}

// TestStoreAuthorized: every model.Store method has a wrapper in this
// package (none is promoted from the raw store) and a rule in rules, and
// the wrapper does what its rule says for the owner, another account and
// the system.
func TestStoreAuthorized(t *testing.T) {
	wrapped := declaredMethods(t)
	storeType := reflect.TypeFor[model.Store]()
	for i := range storeType.NumMethod() {
		name := storeType.Method(i).Name
		if !wrapped[name] {
			t.Errorf("model.Store.%s has no wrapper in server/internal/authz: it is reachable without authorization", name)
		}
		if _, ok := rules[name]; !ok {
			t.Errorf("model.Store.%s has no authorization test: add its rule to rules", name)
		}
	}
	for name := range rules {
		if _, ok := storeType.MethodByName(name); !ok {
			t.Errorf("rules names %s, which model.Store does not have", name)
		}
	}

	for name, kind := range rules {
		t.Run(name, func(t *testing.T) {
			owner := authz.Wrap(inner{owner: "acct-a"})
			stranger := authz.Wrap(inner{owner: "acct-b"})
			// The system (no caller) reaches the store for every method.
			if got, err := call(t, stranger, name, context.Background(), "acct-b"); !got || err != nil {
				t.Errorf("as the system: reached %v, err %v; want it let through", got, err)
			}
			// A caller reaches its own account's records, except for system methods.
			got, err := call(t, owner, name, asCaller("acct-a"), "acct-a")
			if kind == "system" {
				if got || !errors.Is(err, authz.ErrSystemOnly) {
					t.Errorf("as a caller: reached %v, err %v; want ErrSystemOnly", got, err)
				}
				return
			}
			if !got || err != nil {
				t.Errorf("as the owner: reached %v, err %v; want it let through", got, err)
			}
			// Another account's caller is refused as not found where the
			// rule checks ownership; scoped and open methods let it through.
			got, err = call(t, stranger, name, asCaller("acct-a"), "acct-b")
			switch kind {
			case "account", "record", "result", "update":
				if (got && kind != "update") || !errors.Is(err, model.ErrNotFound) {
					t.Errorf("as another account: reached %v, err %v; want ErrNotFound", got, err)
				}
			default:
				if !got || err != nil {
					t.Errorf("as another account (%s): reached %v, err %v; want it let through", kind, got, err)
				}
			}
		})
	}
}

// declaredMethods are the methods this package declares on *Store.
func declaredMethods(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			if st, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := st.X.(*ast.Ident); ok && id.Name == "Store" {
					out[fd.Name.Name] = true
				}
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d wrappers: wrong directory?", len(out))
	}
	return out
}
