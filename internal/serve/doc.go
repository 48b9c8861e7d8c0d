// Package serve is the process plumbing shared by storesvr and allocsvr:
// flags with SEQSVR_* environment equivalents, slog logging, one HTTP
// server per process and one lifecycle (Main, Run) for both binaries.
//
// Guarantees:
//   - A flag given on the command line always wins over its environment
//     variable; an environment variable wins over the default. A malformed
//     value in either is a startup error naming its source.
//   - One listener serves HTTP/1.1 and h2c, so Connect (JSON and binary),
//     gRPC and gRPC-web all reach the same port, with CORS for browsers.
//   - Every request body is bounded (MaxBodyBytes): Connect answers
//     resource_exhausted, plain endpoints 413. Nothing reads an unbounded body.
//   - /healthz answers 200 while the process is up; /readyz and the
//     grpc.health.v1 service answer from the Ready function.
//   - Go's profiler (/debug/pprof/) is served only when asked (--pprof).
//   - Every RPC served, by connect-go or by the front, is counted once on
//     /metrics by procedure, protocol and code (package rpcmetrics).
//   - With Options.Page the status page (package web) is served at "/"
//     and its assets under /ui/, open like /healthz: it holds no data.
//   - The hot routes are answered by an HTTP/1.1 front (package h1) unless
//     --fast-http=false; then net/http and connect-go serve every call. The
//     answers are the same either way, over plain HTTP and over TLS (where
//     the front serves HTTP/1.1 connections after the handshake and h2 ones
//     go to net/http).
//   - The port is bound before the component (store, allocators) is built;
//     until it is, /healthz answers 200 and everything else 503.
//   - On SIGINT/SIGTERM (or a component's Fatal) the server stops
//     accepting and lets in-flight requests finish within --shutdown-grace;
//     only then does the component's context end and its Close run.
package serve
