// Package peers is the module behind `make bench-peers`: it runs seqsvr
// side by side with what a team would deploy instead (a counter in a
// 3-member etcd, Meituan Leaf's segment mode over MariaDB, Redis INCR) and
// writes docs/benchmarks-peers.md with its plots. It is a module of its own
// so that the etcd server and client and the MySQL driver stay out of the
// service's go.mod; the versions are pinned in this go.mod (etcd server
// v3.6.16 is built from it with `go build go.etcd.io/etcd/server/v3`).
//
//   - leaf: a Leaf-segment allocator written the way Leaf's
//     SegmentIDGenImpl works (double buffer, the next segment loaded when
//     10% of the current one is used, dynamic step), over MariaDB.
//   - cmd/leafsvr serves it over HTTP with Leaf's API.
//   - cmd/peerload is bench/loadgen's measuring loop (package drive) with
//     the peers' official Go clients: etcd transactions, MariaDB
//     statements, and the store through the allocsvr's own store client.
//   - cmd/benchpeers starts every system as real processes, alternates the
//     runs, kills leaders, and writes the report.
package peers
