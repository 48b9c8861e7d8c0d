// Package serve is the process plumbing shared by storesvr and allocsvr:
// flags with SEQSVR_* environment equivalents, slog logging, and one HTTP
// server per process.
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
//   - Shutdown stops accepting, lets in-flight requests finish within the
//     given context, then returns; the caller closes its store/allocator after.
package serve
