// Package launch launches real storesvr and allocsvr processes on this
// machine. What it adds to os/exec: processes that die with the launcher
// (StartCommand), loopback addresses kept across restarts, and a
// cluster's whole life (build, start, pause, restart, wait for a leader).
// It serves the cmd packages' integration tests, the benchmarks, the
// fault-injection harness (jepsen/) and `make run` (cmd/devcluster). It
// builds the binaries, lays processes out on free (or fixed) loopback
// ports, starts, pauses, kills and restarts them, waits for a leader and
// for readiness, and creates tags with retries. What only the fault
// harness needs (faults, partitions, checkers) lives under jepsen/; test
// helpers built on this package live in launchtest.
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
package launch
