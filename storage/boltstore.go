package storage

import (
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// OpenBolt opens the Raft log and stable store at path (raft-boltdb/v2)
// the way Open does: bolt's defaults, every commit fsynced, so an entry is
// on disk before it is acknowledged. The bench's raw raft reference opens
// its stores through it, so both sides of that ratio use the same storage.
func OpenBolt(path string) (*raftboltdb.BoltStore, error) {
	return raftboltdb.New(raftboltdb.Options{Path: path})
}
