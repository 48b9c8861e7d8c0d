package alloc

import (
	"fmt"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// MaxCount is the largest count one NextIDs or NextSnowflakeIDs call serves.
const MaxCount = 10000

// ValidateCount applies the contract's count rule: 0 means 1, anything
// outside 1..MaxCount is errs.InvalidArgument.
func ValidateCount(count int32) (int, error) {
	switch {
	case count == 0:
		return 1, nil
	case count < 0 || count > MaxCount:
		return 0, fmt.Errorf("%w: count %d out of range 1..%d", errs.InvalidArgument, count, MaxCount)
	}
	return int(count), nil
}

// validTag applies the store's tag rule (package tagname: 1..128
// characters of [A-Za-z0-9_.:-]) so a bad name never reaches the store.
func validTag(name string) error {
	if err := spec.CheckTag(name); err != nil {
		return fmt.Errorf("%w: %v", errs.InvalidArgument, err)
	}
	return nil
}
