// Package h1 is an HTTP/1.1 front for a process's few hot routes, in front
// of its net/http server on the same listener.
//
// net/http spends most of a tiny request's server CPU on work these routes
// do not need: a background read goroutine per request (to notice a client
// hanging up), deadline updates around it, a header map and a response
// writer per request. On the 2-core bench box that made a bare net/http
// handler half as fast as Redis INCR with the same load generator, and the
// allocsvr could not beat its own HTTP stack. Each connection here is
// served by one goroutine that parses a request in place in its read
// buffer, calls the route and writes the whole answer with one write.
//
// Guarantees:
//   - The front answers only requests it fully understands: HTTP/1.1, an
//     origin-form target without a query, well-formed header lines, one
//     Host, framing by at most one Content-Length (no Transfer-Encoding),
//     no Upgrade, Expect or Origin (CORS is net/http's), Connection absent,
//     keep-alive or close, and the whole request already in the buffer.
//     A fuzz test checks that net/http parses every such request to the
//     same method, path, Host, body and Close.
//   - Everything else is handed off: the connection, with every byte read
//     so far replayed, goes to the net/http server, which serves it from
//     then on (HTTP/2 prior knowledge, h2c upgrade, gRPC, browsers, slow or
//     large requests all land there). A route may decline a request too,
//     as long as it has done nothing yet. A hand-off never loses or
//     reorders a byte, so a client cannot tell which server answered.
//   - Idle connections are closed after IdleTimeout (refreshed at most once
//     a second, so within a second of it). Shutdown stops accepting, closes
//     idle connections, lets in-flight requests finish and answers them
//     with Connection: close, as net/http's Shutdown does.
//   - A panic in a route closes that connection and is logged; the process
//     lives on.
package h1
