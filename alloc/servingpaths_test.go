package alloc

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

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// declared parses the non-test Go files of the module directory pkg and
// returns its functions by the names `go tool covdata func` gives them,
// with their declarations.
func declared(t *testing.T, pkg string) map[string]*ast.FuncDecl {
	t.Helper()
	dir := filepath.Join("..", filepath.FromSlash(pkg)) // this test runs in alloc/
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.FuncDecl{}
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
				out[coverName(fd)] = fd
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

func listed(pkg, fn string) bool {
	return slices.Contains(ServingPaths, ServingPath{pkg, fn})
}

// storeReads are the StoreService RPCs that answer callers from the
// store's state: the reads role client may call (CONTRACT.md), and
// GetRouting, which clients that route by themselves read.
var storeReads = []string{"GetTag", "ListTags", "GetSpace", "ListSpaces", "GetRouting", "ClusterStatus"}

// Every entry of ServingPaths and AnswerPaths names a function its
// package declares (a rename must fix the list, or the coverage gate would
// fail on it), and every route is listed: each method the route
// registrations (Routes, LeafRoutes, seqRoutes) name, each AllocService
// and SeqService RPC's handler, each store read's handler and getOnly.
func TestServingPathsDeclared(t *testing.T) {
	decls := map[string]map[string]*ast.FuncDecl{}
	for _, e := range GatedPaths() {
		if decls[e.Pkg] == nil {
			decls[e.Pkg] = declared(t, e.Pkg)
		}
		if decls[e.Pkg][e.Func] == nil {
			t.Errorf("ServingPaths/AnswerPaths: %s has no function %s", e.Pkg, e.Func)
		}
	}

	registrations := []string{"Routes", "LeafRoutes", "seqRoutes"}
	// builders make the RPC handler values a registration then names
	// (listed below through the generated handler interfaces).
	builders := []string{"Handler", "Service"}
	for _, pkg := range []string{"alloc", "alloc/seq", "storage"} {
		fns := decls[pkg]
		if fns == nil {
			fns = declared(t, pkg)
		}
		n := 0
		for name, fd := range fns {
			i := strings.LastIndexByte(name, '.')
			if i < 0 || !slices.Contains(registrations, fd.Name.Name) {
				continue
			}
			recvType := name[:i]
			recv := fd.Recv.List[0].Names[0].Name
			ast.Inspect(fd.Body, func(node ast.Node) bool {
				sel, ok := node.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != recv {
					return true
				}
				method := recvType + "." + sel.Sel.Name
				if fns[method] == nil || slices.Contains(registrations, sel.Sel.Name) || slices.Contains(builders, sel.Sel.Name) {
					return true // a field, another registration, or what builds the handlers
				}
				n++
				if !listed(pkg, method) {
					t.Errorf("%s %s registers %s, which ServingPaths does not list", pkg, name, method)
				}
				return true
			})
		}
		if n == 0 {
			t.Errorf("%s: no route found in %q: the registrations moved; update this test", pkg, registrations)
		}
	}

	for _, name := range storeReads {
		if _, ok := reflect.TypeFor[seqsvrv1connect.StoreServiceHandler]().MethodByName(name); !ok {
			t.Errorf("StoreService has no RPC %s: update storeReads", name)
		}
		if !slices.Contains(AnswerPaths, ServingPath{"storage", "*service." + name}) {
			t.Errorf("the store read %s's handler is not in AnswerPaths", name)
		}
	}
	if !slices.Contains(AnswerPaths, ServingPath{"alloc", "getOnly"}) {
		t.Error("getOnly, the Leaf routes' refusal of HEAD and POST, is not in AnswerPaths")
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
				t.Errorf("the RPC handler %s %s is not in ServingPaths", h.pkg, fn)
			}
		}
	}
}
