// Package snowflake hands out snowflake IDs under a worker ID leased from
// the store (Meituan Leaf-snowflake).
//
// Generator issues the IDs of one worker ID and needs no store: strictly
// increasing, never at or below its floor nor above its ceiling, waiting
// out small backward clock steps and refusing large ones. Service (Start)
// registers a worker with a WorkerStore, checks the local clock against the
// store leader's, renews the lease and fences itself when it cannot (see
// Service for the guarantees), and keeps a high-water mark and the last
// lease in a data-dir cache so a restart never repeats an ID. Time is read
// through a clock.Clock only, so tests and the fault harness can step it.
package snowflake
