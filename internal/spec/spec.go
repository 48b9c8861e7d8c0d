// Package spec holds the rules the store and the allocsvr must agree on,
// defined once: the tag-name rule, the count limit of one call, the
// snowflake layout and the worker lease. It imports nothing heavy, so the
// allocsvr checks a request before it reaches the store without linking
// Raft. Every error it returns wraps errs.InvalidArgument.
package spec

import (
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// MaxTagLen is the longest tag (and space) name in bytes.
const MaxTagLen = 128

// CheckTag reports why tag is not a valid name: 1..MaxTagLen bytes of
// [A-Za-z0-9_.:-].
func CheckTag(tag string) error {
	if tag == "" {
		return fmt.Errorf("%w: tag must not be empty", errs.InvalidArgument)
	}
	if len(tag) > MaxTagLen {
		return fmt.Errorf("%w: tag is %d bytes long, the limit is %d", errs.InvalidArgument, len(tag), MaxTagLen)
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '-'
		if !ok {
			return fmt.Errorf("%w: tag %q has the character %q at byte %d; allowed are A-Z a-z 0-9 _ . : -",
				errs.InvalidArgument, tag, c, i)
		}
	}
	return nil
}

// MaxCount is the largest count one NextIDs or NextSnowflakeIDs call serves.
const MaxCount = 10000

// CheckCount applies the contract's count rule: 0 means 1, anything
// outside 1..MaxCount is invalid.
func CheckCount(count int32) (int, error) {
	switch {
	case count == 0:
		return 1, nil
	case count < 0 || count > MaxCount:
		return 0, fmt.Errorf("%w: count %d out of range 1..%d", errs.InvalidArgument, count, MaxCount)
	}
	return int(count), nil
}

// MaxRangeCount is the largest count one NextIDRanges call serves: as
// many IDs as the largest default segment step (and the Go client's
// largest local buffer). The answer is a few ranges whatever the count,
// and the allocsvr takes a run with one compare and swap, so the bound
// is not about the answer's size but about how much of a tag's buffered
// IDs one call may drain at once.
const MaxRangeCount = 1_000_000

// CheckRangeCount is CheckCount for NextIDRanges: 0 means 1, anything
// outside 1..MaxRangeCount is invalid.
func CheckRangeCount(count int32) (int, error) {
	switch {
	case count == 0:
		return 1, nil
	case count < 0 || count > MaxRangeCount:
		return 0, fmt.Errorf("%w: count %d out of range 1..%d", errs.InvalidArgument, count, MaxRangeCount)
	}
	return int(count), nil
}

// The default snowflake layout, fixed in the store's FSM so every allocsvr
// encodes and decodes with the same one: 1 sign bit, 41 bits of
// milliseconds since 2024-01-01T00:00:00Z, 10 worker bits, 12 sequence bits.
const (
	DefaultEpochMs       = 1704067200000
	DefaultTimestampBits = 41
	DefaultWorkerBits    = 10
	DefaultSequenceBits  = 12
)

// DefaultLayout returns a fresh copy of the default snowflake layout.
func DefaultLayout() *seqsvrv1.SnowflakeLayout {
	return &seqsvrv1.SnowflakeLayout{
		EpochMs:       DefaultEpochMs,
		TimestampBits: DefaultTimestampBits,
		WorkerBits:    DefaultWorkerBits,
		SequenceBits:  DefaultSequenceBits,
	}
}

const (
	// DefaultWorkerLeaseTTL is the snowflake worker lease the store grants
	// unless configured otherwise; an allocsvr uses it for a store answer
	// that names no TTL.
	DefaultWorkerLeaseTTL = 10 * time.Second
	// DefaultWorkerRetention: an expired worker ID may be reclaimed by a
	// new node once its lease expired this long ago.
	DefaultWorkerRetention = 24 * time.Hour
)

// Per-key sequence spaces: the defaults CreateSpace applies to a
// zero field and the limits the store enforces. A section's memory on the
// allocsvr is 8*section_size bytes, hence MaxSectionSize.
const (
	DefaultKeyCount    = uint64(1) << 32
	DefaultSectionSize = 100000
	DefaultSeqStep     = 10000
	MaxSectionSize     = 10_000_000
	MaxSectionCount    = 1_000_000
	MaxSeqStep         = 1_000_000_000
	// MaxRaiseSections is the most sections one RaiseSections names.
	MaxRaiseSections = 10000
	// DefaultSeqLeaseTTL is the allocsvr membership lease for per-key
	// sequences the store grants unless configured otherwise.
	DefaultSeqLeaseTTL = 5 * time.Second
)

// MaxLeaseTTL bounds the worker and per-key leases a state may carry: a
// restore waits out the lost cluster's longest lease before it grants
// worker IDs and sections, so a longer one would stop them for as long.
const MaxLeaseTTL = time.Hour

// SectionCount is ceil(keyCount/sectionSize): the number of sections of a
// space. sectionSize must not be 0.
func SectionCount(keyCount, sectionSize uint64) uint64 {
	return keyCount/sectionSize + min(keyCount%sectionSize, 1)
}
