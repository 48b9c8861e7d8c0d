package routes

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// module is the import path every gated function's package is under.
const module = "github.com/seqsvr/seqsvr/"

// GatedFunc names one function of the serving paths as `go tool covdata
// func` prints it, for the coverage gate (jepsen/cmd/covergate).
type GatedFunc struct {
	Pkg  string // directory in the module, e.g. "alloc/seq"
	Func string // "*Node.one" for a method, the bare name for a function
}

// Gated is every function on the serving paths the table's entries
// declare (Procedure.Gated, Route.Gated), each once, in the order
// declared: for each gated procedure its handler, its front route and its
// functions; for each gated route its functions; and, when a front route
// has wildcards, the path checks every such route runs here (segments,
// unreserved). The coverage gate of `make jepsen` fails when no fault
// scenario reached one of them. It panics on an entry that is not a named
// function of the module (a closure has no name the profile shows).
func (t Table) Gated() []GatedFunc {
	var out []GatedFunc
	seen := map[GatedFunc]bool{}
	add := func(fns ...any) {
		for _, f := range fns {
			g := gatedName(f)
			if !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
	}
	for _, p := range t.Procedures {
		if p.gated == nil {
			continue
		}
		add(p.gated[0])
		if p.fast != nil {
			add(p.fast)
		}
		add(p.gated[1:]...)
	}
	wild := false
	for _, r := range t.Routes {
		add(r.Gated...)
		wild = wild || (r.Fast != nil && strings.Contains(r.Pattern, "{"))
	}
	if wild {
		add(segments, unreserved)
	}
	return out
}

// gatedName is f's name as the coverage profile gives it: the runtime's
// "module/pkg.(*T).m-fm" (a method value), "module/pkg.(*T).m" (a method
// expression) or "module/pkg.f[...]" (a generic function) becomes
// {"pkg", "*T.m"} or {"pkg", "f"}.
func gatedName(f any) GatedFunc {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Func || v.IsNil() {
		panic(fmt.Sprintf("routes: gated entry %v (%T) is not a function", f, f))
	}
	full := runtime.FuncForPC(v.Pointer()).Name()
	rel, ok := strings.CutPrefix(full, module)
	if !ok {
		panic(fmt.Sprintf("routes: gated function %s is not in %s", full, module))
	}
	rel = strings.TrimSuffix(rel, "-fm")
	if i := strings.IndexByte(rel, '['); i >= 0 {
		rel = rel[:i]
	}
	slash := strings.LastIndexByte(rel, '/')
	dot := strings.IndexByte(rel[slash+1:], '.')
	if dot < 0 {
		panic(fmt.Sprintf("routes: gated function %s has no package", full))
	}
	pkg, name := rel[:slash+1+dot], rel[slash+2+dot:]
	if strings.HasPrefix(name, "(*") {
		name = "*" + strings.Replace(name[2:], ")", "", 1)
	}
	if closure(name) || strings.ContainsAny(name, "()") {
		panic(fmt.Sprintf("routes: gated function %s is a closure: name a function", full))
	}
	return GatedFunc{Pkg: pkg, Func: name}
}

// closure reports a runtime name of a function literal: its last part is
// "func" and a number ("LeafRoutes.func2", "glob..func1"), or a number
// alone (a literal inside a literal, "f.func2.1").
func closure(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	digits := strings.TrimPrefix(last, "func")
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}
