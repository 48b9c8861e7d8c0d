// Package routes is the one registration of what a process serves. Each
// Connect procedure is one Procedure entry: its connect-go handler, the
// least role a token needs to call it, where it has one its route on the
// HTTP/1.1 front (package h1, framed by package connectfast), and whether
// its serving path is under the fault harness's coverage gate (Gated). Each plain HTTP route (the Leaf API) is one Route
// entry: its net/http handler and, where it has one, its front route. A
// Table of them gives the views a process mounts (Services and HTTP for
// net/http, Front for the front), so no procedure is wired twice, and
// routestest runs every front route against its connect-go or net/http
// handler on the same requests.
//
// Guarantees:
//   - A Procedure's connect-go handler is the one protoc-gen-connect-go
//     would build: from the method's descriptor (its schema, and its
//     idempotency level, so Connect GET works where the proto allows it),
//     with the process's handler options. Its request and response types
//     are checked against the descriptor when the entry is made.
//   - A procedure's role and serving path are declared with it, nowhere
//     else: Roles (what a server's token checks put in force) and Gated
//     (what jepsen/cmd/covergate requires a fault scenario to reach) are
//     derived from the table. A procedure cannot be made without a role
//     of client, alloc or admin; Gated names functions by their Go
//     values, so a declaration that names no function does not compile.
//   - Services refuses a table that registers a procedure twice or leaves
//     out a method of a service it serves, so a service is whole or the
//     process does not start.
//   - Every route string is written once: a Procedure is named by its
//     generated procedure constant; a Route's front prefix is the literal
//     part of its ServeMux pattern.
//   - The front answers a Route only for the pattern's method, without a
//     body, and with every wildcard one path segment of unreserved
//     characters other than "." and ".." (net/http's mux decodes and cleans
//     anything else, and its answer is the reference); it declines the
//     rest to net/http.
package routes
