// Package seq serves per-key sequences (WeChat seqsvr mode) on an
// allocsvr. A space's keys are grouped in sections; the store's routing
// table gives each section to one allocsvr (Node), which keeps a cur_seq
// per key of the sections it serves in memory and raises the section's
// durable max_seq in the store (RaiseSections) ahead of need. Any Node
// answers any key: it serves its own sections and forwards the rest once
// to their owner (header Seqsvr-Forwarded: 1; a forwarded call is never
// forwarded again).
//
// Guarantee 8 (per-key order): a NextSeq that begins after another NextSeq
// or CurrentSeqs of the same key answered returns a larger value, whichever
// allocsvrs served them. It holds because:
//
//   - A Node hands out a section's values only while it serves the section:
//     its lease is valid by its own monotonic clock (measured from the send
//     time of the last heartbeat the store answered, minus FenceMargin), the
//     latest table names it owner with no next_owner, and the section's
//     memory was loaded under that same unbroken lease (a lapse drops every
//     section's memory, so a section is reloaded after it).
//   - It never hands out a value above the section's committed max_seq
//     (limit): a call that would pass it waits for a raise.
//   - The store moves a section only when its owner released it (after the
//     owner dropped its memory, so it serves nothing of it any more) or the
//     owner's lease expired on the store's clock, which is later than the
//     owner fenced itself on its own.
//   - A new owner's first load answers prev_max, the committed max_seq,
//     which is >= every value the old owner handed out; it hands out only
//     values above it. A stale owner's raise is refused, so it can never
//     commit a limit it could use after losing the section.
//
// Within one owner a key's values grow under the section's mutex. A
// NextSeqs whose keys span several owners is split and answered in the
// request's order; if a part fails the call fails, and the values the
// other parts took are not undone (they are skipped, never handed out).
package seq
