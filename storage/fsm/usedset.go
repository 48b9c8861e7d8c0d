package fsm

import "bytes"

// usedSet is a section's used-set: the key offsets that were ever handed a
// value, one bit each (bit i%8 of byte i/8), trailing zero bytes trimmed.
// The owner records a key here through the log before its first value is
// answered, so any later owner knows which keys were never used and
// answers 0 for them (the contract's CurrentSeqs), while every other key
// starts at the section's max_seq. It costs a bit per key of the sections
// in use: 12.5 KB for a full default section of 100000 keys.
type usedSet []byte

// add sets offset i (< n, the section's key count) and returns the set.
func (u usedSet) add(i uint32, n uint64) usedSet {
	if uint64(i) >= n {
		return u
	}
	b := int(i / 8)
	if b >= len(u) {
		u = append(u, make([]byte, b+1-len(u))...)
	}
	u[b] |= 1 << (i % 8)
	return u
}

// bytes is a copy for an answer or a snapshot, nil when empty.
func (u usedSet) bytes() []byte {
	t := bytes.TrimRight(u, "\x00")
	if len(t) == 0 {
		return nil
	}
	return bytes.Clone(t)
}
