package alloc

import "fmt"

// MaxCount is the largest count one NextIDs or NextSnowflakeIDs call serves.
const MaxCount = 10000

// segMaxTagLen bounds tag names; the store enforces the same rule.
const segMaxTagLen = 128

// ValidateCount applies the contract's count rule: 0 means 1, anything
// outside 1..MaxCount is ErrInvalidArgument.
func ValidateCount(count int32) (int, error) {
	switch {
	case count == 0:
		return 1, nil
	case count < 0 || count > MaxCount:
		return 0, fmt.Errorf("%w: count %d out of range 1..%d", ErrInvalidArgument, count, MaxCount)
	}
	return int(count), nil
}

// validTag reports whether name is 1..128 characters of [A-Za-z0-9_.:-].
// It is local because package storage did not export a validator when this
// was written; the rule matches the store's.
func validTag(name string) error {
	if len(name) == 0 || len(name) > segMaxTagLen {
		return fmt.Errorf("%w: tag must be 1..%d characters, got %d", ErrInvalidArgument, segMaxTagLen, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '_', c == '.', c == ':', c == '-':
		default:
			return fmt.Errorf("%w: tag %q: character %q not allowed (use [A-Za-z0-9_.:-])", ErrInvalidArgument, name, c)
		}
	}
	return nil
}
