package routes

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
)

// Procedure is one Connect procedure as a process serves it.
type Procedure struct {
	// Name is the procedure's path, "/seqsvr.v1.AllocService/NextIDs".
	Name string
	// Role is the least role a token needs to call it (auth.Roles, built
	// by Table.Roles, is every procedure's).
	Role    auth.Role
	method  protoreflect.MethodDescriptor
	handler func(opts []connect.HandlerOption) http.Handler
	fast    connectfast.Func
	decline []string // headers whose presence declines a call on the front
	// handlerFunc is the handler as given, named by Gated.
	handlerFunc any
	// gated, when set, puts the procedure under the coverage gate: its
	// handler, its front route and these functions (see Gated).
	gated []any
}

// Unary makes the entry of a unary procedure that role may call, served
// by h; procedure is its generated constant
// (seqsvrv1connect.AllocServiceNextIDsProcedure). It panics when the
// procedure is not in the linked protobuf descriptors, its types are not
// Req and Res, or role is not client, alloc or admin (the health service,
// open, is serve's; a metrics token calls nothing): a wiring mistake,
// found at start.
func Unary[Req, Res any](procedure string, role auth.Role, h func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error)) Procedure {
	md := entry[Req, Res](procedure, role)
	return Procedure{Name: procedure, Role: role, method: md, handlerFunc: h, handler: func(opts []connect.HandlerOption) http.Handler {
		return connect.NewUnaryHandler(procedure, h, handlerOptions(md, opts)...)
	}}
}

// ServerStream makes the entry of a server-streaming procedure that role
// may call, served by h (StoreService.Backup); it panics as Unary does.
// It has no front route.
func ServerStream[Req, Res any](procedure string, role auth.Role, h func(context.Context, *connect.Request[Req], *connect.ServerStream[Res]) error) Procedure {
	md := entry[Req, Res](procedure, role)
	return Procedure{Name: procedure, Role: role, method: md, handlerFunc: h, handler: func(opts []connect.HandlerOption) http.Handler {
		return connect.NewServerStreamHandler(procedure, h, handlerOptions(md, opts)...)
	}}
}

// entry checks what Unary and ServerStream are given and returns the
// procedure's descriptor.
func entry[Req, Res any](procedure string, role auth.Role) protoreflect.MethodDescriptor {
	md := method(procedure)
	checkType[Req](procedure, "request", md.Input())
	checkType[Res](procedure, "response", md.Output())
	if role < auth.Client || role > auth.Admin {
		panic(fmt.Sprintf("routes: %s has role %v: a procedure needs client, alloc or admin", procedure, role))
	}
	return md
}

// handlerOptions are a procedure's connect-go options: its schema, its
// idempotency level from the proto, then the process's opts.
func handlerOptions(md protoreflect.MethodDescriptor, opts []connect.HandlerOption) []connect.HandlerOption {
	o := []connect.HandlerOption{connect.WithSchema(md)}
	if mo, ok := md.Options().(*descriptorpb.MethodOptions); ok && mo.GetIdempotencyLevel() != descriptorpb.MethodOptions_IDEMPOTENCY_UNKNOWN {
		o = append(o, connect.WithIdempotency(connect.IdempotencyLevel(mo.GetIdempotencyLevel())))
	}
	return append(o, connect.WithHandlerOptions(opts...))
}

// WithFast gives the procedure a route on the front: f answers a Connect
// binary unary call (connectfast.H1 frames it). A call carrying any of
// declineHeaders, whatever its value, is declined to connect-go before f
// runs.
func (p Procedure) WithFast(f connectfast.Func, declineHeaders ...string) Procedure {
	p.fast, p.decline = f, declineHeaders
	return p
}

// Gated puts the procedure's serving path under the coverage gate of the
// fault harness (Table.Gated): its handler, its front route if it has
// one, and fns, the other named functions every call of it runs through
// (functions or method values; a method of another type by its method
// expression).
func (p Procedure) Gated(fns ...any) Procedure {
	p.gated = append([]any{p.handlerFunc}, fns...)
	return p
}

// HasFast reports whether the procedure has a route on the front.
func (p Procedure) HasFast() bool { return p.fast != nil }

// service is the full name of the procedure's service.
func (p Procedure) service() protoreflect.ServiceDescriptor {
	return p.method.Parent().(protoreflect.ServiceDescriptor)
}

// method finds the descriptor of "/pkg.Service/Method".
func method(procedure string) protoreflect.MethodDescriptor {
	name, ok := strings.CutPrefix(procedure, "/")
	i := strings.LastIndexByte(name, '/')
	if !ok || i < 0 {
		panic(fmt.Sprintf("routes: %q is not a procedure (/pkg.Service/Method)", procedure))
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name[:i] + "." + name[i+1:]))
	md, isMethod := d.(protoreflect.MethodDescriptor)
	if err != nil || !isMethod {
		panic(fmt.Sprintf("routes: procedure %q has no method descriptor: %v", procedure, err))
	}
	return md
}

func checkType[T any](procedure, what string, want protoreflect.MessageDescriptor) {
	m, ok := any(new(T)).(proto.Message)
	if !ok || m.ProtoReflect().Descriptor().FullName() != want.FullName() {
		panic(fmt.Sprintf("routes: %s of %s is %s, not %T", what, procedure, want.FullName(), m))
	}
}
