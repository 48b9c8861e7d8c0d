// Package bench holds the benchmarks that need real processes: the store's
// ReserveSegment throughput and failover, the allocsvr's network QPS, and
// per-key sequences (NextSeq against NextIDs over the network; how long a
// killed or stopped allocsvr's sections stay unserved).
// Every figure is reported beside a reference measured in the same run (a
// raw hashicorp/raft apply loop, a bare net/http handler behind the same
// load generator, Redis INCR), because on a shared 2-core machine only the
// ratio is stable. The load generator runs as its own process (bench/loadgen)
// so it does not share a Go scheduler with the server it measures.
package bench
