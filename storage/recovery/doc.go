// Package recovery turns the state of a lost cluster (a backup, or a
// surviving member's own data) into the first state of a new one, so that
// nothing the lost cluster handed out is handed out again (guarantee 10).
//
// Guarantees of Prepare:
//
//   - Every tag's max_id, every tombstone's max_id and every section's
//     max_seq (including sections never raised, which are at 0) jumps up by
//     max(peak rate x Over, MinJump, floor), where the peak rate is the
//     highest advance rate recorded for that counter (storage/fsm records
//     it in Apply), Over is the jump duration, and the floor is
//     2 x max(the largest segment, the tag's step) for tags and 2 x the
//     space's step for sections. A sum that would pass 2^63-1 stops there
//     (the counter is used up, never wrapped).
//   - Every snowflake worker lease is void (no instance holds it; its
//     last timestamp is at least the restore's start) and every per-key
//     section is unowned; the state's restore fence is Start + LeaseWait,
//     before which the state machine grants no worker ID and no section.
//   - Sections' used-sets are dropped: every key of a section counts as
//     used, so a key first used after the state was taken still starts
//     above its section's jumped max_seq.
//   - The request_id record, the allocsvr leases and the members'
//     addresses are dropped; the state gets the new cluster ID.
//
// It is safe when no counter advanced, between the time the state was
// taken and the end of the lost cluster, by more than its jump: that is,
// no faster than its peak rate for longer than Over. DefaultOver is
// max(2 x age, 1h), age being how old the state is when the restore
// starts, which bounds how long the lost cluster could have run on.
package recovery
