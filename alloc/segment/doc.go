// Package segment is the Leaf-segment allocator: per-tag double buffers of
// IDs refilled from the Raft-replicated store (Meituan Leaf-segment).
//
// Guarantees:
//
//   - Unique: every ID handed out lies in a segment the store committed for
//     this process alone (ReserveSegment is linearizable and ranges never
//     overlap), and each ID of a segment is handed out at most once.
//   - Strictly increasing per tag within one process: a segment is only put
//     in use when it lies above everything served before, and one NextIDs
//     answer is strictly increasing even when it spans a segment switch.
//     NextIDRanges answers the same IDs (the two calls take runs from the
//     same buffers and carry) as increasing, disjoint ranges, with no work
//     or memory per ID: one range per segment touched, touching runs
//     joined. The order holds in real time too: every ID of a request that
//     returned is below every ID of one started after it, also when a
//     request that failed left its IDs in carry (a request that reaches
//     into the next segment makes it current only once it completes or has
//     used it up, so the lock-free fast path never takes IDs above carry).
//   - Available: a request never waits on the store while a buffered
//     segment can serve it. The next segment is reserved in the background
//     once 10% of the current one is used, by at most one loader per tag.
//     When both buffers are empty the request waits a bounded time for an
//     in-flight load and then answers errs.Unavailable; it never hangs.
//   - Deleted tags stop promptly: a reservation answered not_found, or the
//     check of every buffered tag with GetTag that runs once per
//     TagCheckInterval (default 5s), drops the tag's buffers at once, so a
//     deleted tag answers errs.NotFound within about TagCheckInterval plus
//     one pass of GetTag calls while the store is reachable. A tag deleted
//     and re-created between two checks keeps its buffers: their IDs lie
//     below the new life's (the store's tombstone), so nothing repeats.
//   - No burned IDs on bad input: tag names (spec.CheckTag) and counts are
//     checked before anything touches the buffers or the store.
package segment
