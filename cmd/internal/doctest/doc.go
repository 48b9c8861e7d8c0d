// Package doctest runs the operator documentation's shell blocks as an
// operator would type them, against real storesvr and allocsvr processes,
// so a renamed flag, a wrong order or a changed answer in a doc fails a
// test instead of an operator. It holds only tests.
//
// Guarantees:
//   - Each tested section of docs/operations.md ("A cluster by hand",
//     "Per-key sequences with curl", "Adding and removing members") and
//     docs/disaster-recovery.md ("Backups", "Restore: the whole store is
//     lost", "Quorum loss: a majority is gone for good") has one test that
//     reads its ```sh blocks by the section's heading and runs them with
//     bash (-e, pipefail); a missing heading or block fails the test.
//   - What the doc writes is run as written, except for the listed
//     substitutions of what cannot be the same on a test machine (fixed
//     ports, the 10.0.0.N hosts, /backups/, /var/lib/seqsvr, data/, bin/,
//     the dated example backup name, `make build`, and a host's
//     foreground storesvr put in the background). Every substitution must
//     match at least once, so a doc that changes under it fails the test;
//     a script still naming a 10.0.0.N host, /backups, /var/lib or
//     `make build` after them is refused before it runs.
//   - A block that is a step of a procedure runs in the situation its
//     prose describes (a running cluster with a tag and reserved IDs, a
//     backup the Backups block took, the members stopped and their data
//     dirs emptied), and the test checks the outcome the prose promises
//     (the restored or recovered cluster answers with a new cluster ID and
//     a higher generation, the tag continues above every ID handed out
//     before, the other members join as voters, the allocsvr follows the
//     new cluster). Outputs a block shows in `# ...` comments are compared
//     with what it printed.
//   - Every process a block starts runs in the block's own process group,
//     which is killed when the test ends; one that exits before the test
//     stops it (a flag the binary no longer knows, a refused start) fails
//     the test at once. Under -short every test skips.
package doctest
