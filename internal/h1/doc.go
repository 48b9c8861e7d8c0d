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
//   - The front answers only requests it fully understands: HTTP/1.1, not
//     HEAD, an origin-form target without a query and with well-formed
//     escapes, well-formed header lines, one Host, framing by at most one
//     Content-Length (no Transfer-Encoding), no Upgrade, Expect or Origin
//     (CORS is net/http's), Connection absent, keep-alive or close, and the
//     whole request within BufferSize. A fuzz test checks that net/http
//     parses every such request to the same method, target, Host, header
//     values, body and Close.
//   - Everything else is handed off: the connection, with every byte read
//     so far replayed, goes to the net/http server, which serves it from
//     then on (HTTP/2 prior knowledge, h2c upgrade, gRPC, browsers, large
//     requests all land there). A route may decline a request too, as long
//     as it has done nothing yet. A hand-off never loses or reorders a
//     byte, so a client cannot tell which server answered.
//   - A connection the front has answered on is, for the client, the same
//     as one net/http kept: a hand-off after an answer goes to a copy of
//     the net/http server that does not look for HTTP/2's preface (net/http
//     looks only at a connection's start), so a later `PRI * HTTP/2.0` is an
//     HTTP/1.1 request and a short remainder is read at once; after a POST
//     the CR and LF among the next 4 bytes are skipped, as net/http does.
//     A request cut short by a hang-up or a timeout goes to net/http with
//     the error that ended it, so it is answered (or dropped) as net/http
//     alone would. A differential fuzz test (FuzzFrontMatchesNetHTTP) sends
//     the same bytes to the front and to net/http alone and wants the same
//     requests dispatched.
//   - A request may arrive in pieces (Go's http.Transport writes head and
//     body apart); the front waits for the rest within the connection's
//     deadline.
//   - Deadlines follow net/http's: a new connection has ReadHeaderTimeout
//     for its first request (head and body: net/http times only the head,
//     but clients send a small body with it). An answered connection then
//     waits, within IdleTimeout, for 4 bytes of the next request (fewer and
//     it is closed at the timeout), and a request not all there at once
//     gets ReadHeaderTimeout from then. With BodyTimeout set, a request
//     whose head is whole and body is not has BodyTimeout from then for
//     the body instead. The idle deadline is moved at most
//     once a second, so it may fall up to a second short. Each request gets
//     a fresh IdleTimeout for its answer.
//   - With Admit set, the front waits for no body of a request whose head
//     Admit refuses: the request goes to net/http as soon as its head is
//     whole (a token checked on the headers, before any body byte).
//   - Framing headers (Content-Length, Date, Connection) are the front's
//     own; line breaks in a route's header values become spaces.
//   - Shutdown stops accepting, closes idle connections, lets in-flight
//     requests finish with Connection: close (a request handed off in
//     flight is still served by net/http, shut down only after the front's
//     own connections are done), then shuts net/http down.
//   - A panic in a route closes that connection and is logged; the process
//     lives on.
//   - ServeTLS puts the front behind TLS: each connection's handshake runs
//     in its own goroutine (not the accept loop) within net/http's
//     handshake timeout, and nothing is read as a request before it
//     completes, so client certificates the configuration requires are
//     checked first on every path. A connection that chose h2 by ALPN goes
//     to net/http as the *tls.Conn itself, untouched, and is served as by
//     net/http's own ServeTLS; an http/1.1 one is served as above, and a
//     request handed off from it still has Request.TLS. A differential fuzz
//     test (FuzzTLSFrontMatchesNetHTTP) compares it with net/http's
//     ServeTLS.
package h1
