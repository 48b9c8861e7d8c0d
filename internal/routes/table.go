package routes

import (
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// Table is everything a process serves besides health, metrics and the
// status page.
type Table struct {
	Procedures []Procedure
	Routes     []Route
	// Partial: the table serves only some procedures of its services on
	// purpose (what a component answers while it is still starting);
	// Services then does not require every method.
	Partial bool
}

// Add returns t with u's entries appended.
func (t Table) Add(u Table) Table {
	return Table{Procedures: append(t.Procedures[:len(t.Procedures):len(t.Procedures)], u.Procedures...),
		Routes: append(t.Routes[:len(t.Routes):len(t.Routes)], u.Routes...)}
}

// Roles is the least role of every procedure of the table, as declared
// with it (Unary, ServerStream): what a server's token checks need
// (auth.Authorizer.SetRoles). It panics on a procedure declared twice
// with two roles.
func (t Table) Roles() auth.Roles {
	out := make(auth.Roles, len(t.Procedures))
	for _, p := range t.Procedures {
		if r, dup := out[p.Name]; dup && r != p.Role {
			panic(fmt.Sprintf("routes: %s declared with roles %v and %v", p.Name, r, p.Role))
		}
		out[p.Name] = p.Role
	}
	return out
}

// Service is one Connect service to mount on net/http: its full proto
// name, its path prefix and the connect-go handler of all its procedures.
type Service struct {
	Name    string // "seqsvr.v1.AllocService"
	Path    string // "/seqsvr.v1.AllocService/"
	Handler http.Handler
}

// Services builds the connect-go handlers with opts (the process's body
// bound, recovery, interceptors), one Service per proto service, in the
// order of their first procedure. A path under a service's prefix that
// names none of its procedures is 404, as in generated code. It panics on
// a procedure registered twice or a method of a service left out.
func (t Table) Services(opts ...connect.HandlerOption) []Service {
	var out []Service
	byName := map[string]map[string]http.Handler{}
	for _, p := range t.Procedures {
		name := string(p.service().FullName())
		procs, ok := byName[name]
		if !ok {
			procs = map[string]http.Handler{}
			byName[name] = procs
			out = append(out, Service{Name: name, Path: "/" + name + "/", Handler: serviceMux(procs)})
		}
		if _, dup := procs[p.Name]; dup {
			panic(fmt.Sprintf("routes: %s registered twice", p.Name))
		}
		procs[p.Name] = p.handler(opts)
	}
	for _, p := range t.Procedures {
		if t.Partial {
			break
		}
		methods := p.service().Methods()
		for i := range methods.Len() {
			name := "/" + string(p.service().FullName()) + "/" + string(methods.Get(i).Name())
			if _, ok := byName[string(p.service().FullName())][name]; !ok {
				panic(fmt.Sprintf("routes: %s is not registered, but its service is", name))
			}
		}
	}
	return out
}

func serviceMux(procs map[string]http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, ok := procs[r.URL.Path]; ok {
			h.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
}

// HTTP is the routes for net/http, keyed by ServeMux pattern. It panics on
// a pattern registered twice.
func (t Table) HTTP() map[string]http.Handler {
	out := make(map[string]http.Handler, len(t.Routes))
	for _, r := range t.Routes {
		if _, dup := out[r.Pattern]; dup {
			panic(fmt.Sprintf("routes: %q registered twice", r.Pattern))
		}
		out[r.Pattern] = r.Handler
	}
	return out
}

// Front is the front's routes: every procedure and route that has one,
// procedures framed by connectfast.H1 with maxBodyBytes (a nil logger
// means slog.Default()). What it declines goes to net/http.
func (t Table) Front(maxBodyBytes int64, logger *slog.Logger) h1.Handler {
	var m h1.Mux
	for _, p := range t.Procedures {
		if p.fast != nil {
			m.Handle(p.Name, declining(p.decline, connectfast.H1(maxBodyBytes, logger, p.fast)))
		}
	}
	seen := map[string]bool{}
	for _, r := range t.Routes {
		if r.Fast == nil {
			continue
		}
		pattern, h := r.front()
		if seen[pattern] {
			panic(fmt.Sprintf("routes: front route %q registered twice", pattern))
		}
		seen[pattern] = true
		m.Handle(pattern, h)
	}
	return &m
}

// declining declines a call that carries any of headers, whatever its
// value, before h runs.
func declining(headers []string, h h1.Handler) h1.Handler {
	if len(headers) == 0 {
		return h
	}
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		for _, name := range headers {
			if _, n := req.Header(name); n != 0 {
				return false
			}
		}
		return h.ServeH1(req, resp)
	})
}
