// Package cluster launches real storesvr and allocsvr processes on this
// machine for integration tests, the fault-injection harness and `make run`.
//
// Guarantees:
//   - Every process runs in its own process group and, on Linux, receives
//     SIGKILL when the launching process dies (Pdeathsig), so a crashed or
//     interrupted test never leaves servers behind.
//   - Ports are picked free on 127.0.0.1 (or fixed, when asked) once per
//     Proc and kept across restarts, so a restarted member keeps its identity
//     and address, as Raft requires.
//   - Each process's stdout and stderr are appended to its LogPath, across
//     restarts, with a marker line per start.
//   - Close is idempotent and safe from t.Cleanup: it kills every process.
package cluster
