// Package tagname is the one rule for tag names, shared by the store and
// the allocsvr. It imports nothing heavy, so the allocsvr can reject a bad
// name before it reaches the store without linking Raft.
package tagname

import (
	"errors"
	"fmt"
)

// MaxLen is the longest tag name in bytes.
const MaxLen = 128

// Check reports why tag is not a valid name: 1..MaxLen bytes of
// [A-Za-z0-9_.:-]. Callers wrap the error in their own sentinel.
func Check(tag string) error {
	if tag == "" {
		return errors.New("tag must not be empty")
	}
	if len(tag) > MaxLen {
		return fmt.Errorf("tag is %d bytes long, the limit is %d", len(tag), MaxLen)
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("tag %q has the character %q at byte %d; allowed are A-Z a-z 0-9 _ . : -", tag, c, i)
		}
	}
	return nil
}
