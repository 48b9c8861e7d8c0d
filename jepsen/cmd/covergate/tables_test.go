package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// declared parses the non-test Go files of the module directory pkg and
// returns the names `go tool covdata func` gives its functions.
func declared(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	dir := filepath.Join("..", "..", "..", filepath.FromSlash(pkg)) // this test runs in jepsen/cmd/covergate
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				out[coverName(fd)] = true
			}
		}
	}
	return out
}

// coverName is "*T.m", "T.m" or "f".
func coverName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return typeName(fd.Recv.List[0].Type) + "." + fd.Name.Name
}

func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return "*" + typeName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr: // a generic receiver
		return typeName(x.X)
	}
	return "?"
}

// storeReads are the StoreService RPCs that answer callers from the
// store's state: the reads role client may call (CONTRACT.md), and
// GetRouting, which clients that route by themselves read.
var storeReads = []string{"GetTag", "ListTags", "GetSpace", "ListSpaces", "GetRouting", "ClusterStatus"}

// Every function the tables declare on a serving path is one its package
// declares, under the name the coverage profile gives it (so the gate
// cannot fail on a name the profile never prints), and every path that
// hands out or answers is declared: each AllocService and SeqService
// RPC's handler, each store read's handler, every Leaf route (getOnly,
// the 405 to every method but GET, among them).
func TestServingPathsDeclared(t *testing.T) {
	tb := tables()
	gated := tb.Gated()
	if len(gated) == 0 {
		t.Fatal("no serving path declared")
	}
	decls := map[string]map[string]bool{}
	for _, g := range gated {
		if decls[g.Pkg] == nil {
			decls[g.Pkg] = declared(t, g.Pkg)
		}
		if !decls[g.Pkg][g.Func] {
			t.Errorf("declared serving path %s %s is no function of its package", g.Pkg, g.Func)
		}
	}
	listed := func(pkg, fn string) bool { return slices.Contains(gated, routes.GatedFunc{Pkg: pkg, Func: fn}) }
	for _, name := range storeReads {
		if _, ok := reflect.TypeFor[seqsvrv1connect.StoreServiceHandler]().MethodByName(name); !ok {
			t.Errorf("StoreService has no RPC %s: update storeReads", name)
		}
		if !listed("storage", "*service."+name) {
			t.Errorf("the store read %s is not gated", name)
		}
	}
	for _, h := range []struct {
		iface    reflect.Type
		pkg, typ string
	}{
		{reflect.TypeFor[seqsvrv1connect.AllocServiceHandler](), "alloc", "*Service"},
		{reflect.TypeFor[seqsvrv1connect.SeqServiceHandler](), "alloc/seq", "Handler"},
	} {
		for i := range h.iface.NumMethod() {
			if fn := h.typ + "." + h.iface.Method(i).Name; !listed(h.pkg, fn) {
				t.Errorf("the RPC handler %s %s is not gated", h.pkg, fn)
			}
		}
	}
	for _, r := range tb.Routes {
		if len(r.Gated) == 0 {
			t.Errorf("the Leaf route %q is not gated", r.Pattern)
		}
	}
	if !listed("alloc", "getOnly") {
		t.Error("getOnly, the Leaf routes' refusal of HEAD and POST, is not gated")
	}
}

// Every RPC of every proto file is served with a role, none open (the
// health service, open, is serve's), and every role declared is an RPC's.
func TestEveryProcedureHasARole(t *testing.T) {
	roles := tables().Roles()
	files := []protoreflect.FileDescriptor{
		seqsvrv1.File_seqsvr_v1_store_proto, seqsvrv1.File_seqsvr_v1_alloc_proto,
		seqsvrv1.File_seqsvr_v1_seq_proto, seqsvrv1.File_seqsvr_v1_raft_proto,
	}
	seen := map[string]bool{}
	for _, f := range files {
		for i := 0; i < f.Services().Len(); i++ {
			s := f.Services().Get(i)
			for j := 0; j < s.Methods().Len(); j++ {
				p := "/" + string(s.FullName()) + "/" + string(s.Methods().Get(j).Name())
				seen[p] = true
				r, ok := roles[p]
				if !ok {
					t.Errorf("%s has no role: no table serves it", p)
				} else if r == auth.Open {
					t.Errorf("%s is open: only health checks may be", p)
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found only %d procedures; are the proto files registered?", len(seen))
	}
	for p := range roles {
		if !seen[p] {
			t.Errorf("a table serves %s, which no service has", p)
		}
	}
}

// The roles the tables declare are the contract's.
func TestContractRoles(t *testing.T) {
	roles := tables().Roles()
	for p, want := range map[string]auth.Role{
		"/seqsvr.v1.StoreService/GetTag":         auth.Client,
		"/seqsvr.v1.StoreService/ListTags":       auth.Client,
		"/seqsvr.v1.StoreService/GetSpace":       auth.Client,
		"/seqsvr.v1.StoreService/ListSpaces":     auth.Client,
		"/seqsvr.v1.StoreService/ClusterStatus":  auth.Client,
		"/seqsvr.v1.StoreService/MemberProbe":    auth.Client,
		"/seqsvr.v1.StoreService/ReserveSegment": auth.Alloc,
		"/seqsvr.v1.StoreService/RegisterWorker": auth.Alloc,
		"/seqsvr.v1.StoreService/RenewWorker":    auth.Alloc,
		"/seqsvr.v1.StoreService/GetRouting":     auth.Alloc,
		"/seqsvr.v1.StoreService/SeqHeartbeat":   auth.Alloc,
		"/seqsvr.v1.StoreService/RaiseSections":  auth.Alloc,
		"/seqsvr.v1.StoreService/CreateTag":      auth.Admin,
		"/seqsvr.v1.StoreService/UpdateTag":      auth.Admin,
		"/seqsvr.v1.StoreService/DeleteTag":      auth.Admin,
		"/seqsvr.v1.StoreService/AddMember":      auth.Admin,
		"/seqsvr.v1.StoreService/RemoveMember":   auth.Admin,
		"/seqsvr.v1.StoreService/CreateSpace":    auth.Admin,
		"/seqsvr.v1.StoreService/Backup":         auth.Admin,
		"/seqsvr.v1.AllocService/NextIDs":        auth.Client,
		"/seqsvr.v1.AllocService/NextIDRanges":   auth.Client,
		"/seqsvr.v1.AllocService/Status":         auth.Client,
		"/seqsvr.v1.SeqService/NextSeq":          auth.Client,
		"/seqsvr.v1.SeqService/Routing":          auth.Client,
	} {
		if got := roles.Required(p); got != want {
			t.Errorf("%s needs %v, want %v", p, got, want)
		}
	}
}
