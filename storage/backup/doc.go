// Package backup is the backup file: a point-in-time copy of the store's
// state (seqsvr.v1.Backup) framed so that a damaged or foreign file is
// never read as a backup.
//
// Layout (all integers big-endian):
//
//	magic "SEQSVRBK" (8 bytes)
//	format version (uint32)
//	payload length (uint64)
//	payload: a marshalled seqsvr.v1.Backup
//	SHA-256 of everything before it (32 bytes)
//
// Guarantees: Decode refuses, with an error naming the problem, a file
// that is not a backup (ErrNotBackup), one of a newer format than this
// binary's, whether in the frame or in the state it holds
// (ErrFutureVersion, naming both versions), one cut short (ErrTruncated)
// and one whose bytes changed (ErrCorrupt). It reads the version before
// anything else, so a newer file is named as newer rather than corrupt.
// Encode(Decode(b)) round-trips the state exactly.
package backup
