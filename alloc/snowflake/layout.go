package snowflake

import (
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// layout is a validated layout with its shifts and masks precomputed (the
// store hands it out; spec.DefaultLayout is the one it uses unless the
// cluster was configured otherwise).
type layout struct {
	epochMs     int64
	tsBits      uint
	workerBits  uint
	seqBits     uint
	maxTsDelta  int64 // largest encodable ms since the epoch
	workerMask  int64
	seqMask     int64
	workerShift uint
	tsShift     uint
}

func newLayout(l *seqsvrv1.SnowflakeLayout) (layout, error) {
	if l == nil {
		return layout{}, fmt.Errorf("%w: snowflake layout missing", errs.InvalidArgument)
	}
	ts, wk, sq := l.GetTimestampBits(), l.GetWorkerBits(), l.GetSequenceBits()
	if ts < 1 || wk < 1 || sq < 1 || ts+wk+sq > 63 {
		return layout{}, fmt.Errorf("%w: snowflake layout %d/%d/%d bits must be positive and fit in 63",
			errs.InvalidArgument, ts, wk, sq)
	}
	if l.GetEpochMs() < 0 {
		return layout{}, fmt.Errorf("%w: snowflake epoch %d is negative", errs.InvalidArgument, l.GetEpochMs())
	}
	return layout{
		epochMs:     l.GetEpochMs(),
		tsBits:      uint(ts),
		workerBits:  uint(wk),
		seqBits:     uint(sq),
		maxTsDelta:  1<<uint(ts) - 1,
		workerMask:  1<<uint(wk) - 1,
		seqMask:     1<<uint(sq) - 1,
		workerShift: uint(sq),
		tsShift:     uint(wk + sq),
	}, nil
}

func (l layout) proto() *seqsvrv1.SnowflakeLayout {
	return &seqsvrv1.SnowflakeLayout{
		EpochMs:       l.epochMs,
		TimestampBits: int32(l.tsBits),
		WorkerBits:    int32(l.workerBits),
		SequenceBits:  int32(l.seqBits),
	}
}

func (l layout) equal(o *seqsvrv1.SnowflakeLayout) bool {
	return o != nil && l.epochMs == o.GetEpochMs() && int32(l.tsBits) == o.GetTimestampBits() &&
		int32(l.workerBits) == o.GetWorkerBits() && int32(l.seqBits) == o.GetSequenceBits()
}

// decode splits id. futureLimitMs bounds the timestamp: an ID claiming a
// later time was not issued by any sane worker.
func (l layout) decode(id, futureLimitMs int64) (*seqsvrv1.DecodeSnowflakeResponse, error) {
	if id < 0 {
		return nil, fmt.Errorf("%w: snowflake ID %d is negative", errs.InvalidArgument, id)
	}
	if total := l.tsShift + l.tsBits; total < 63 && id>>total != 0 {
		return nil, fmt.Errorf("%w: snowflake ID %d has bits above the %d-bit layout", errs.InvalidArgument, id, total)
	}
	tsMs := id>>l.tsShift + l.epochMs
	if tsMs > futureLimitMs {
		return nil, fmt.Errorf("%w: snowflake ID %d has timestamp %s, in the future",
			errs.InvalidArgument, id, formatMs(tsMs))
	}
	return &seqsvrv1.DecodeSnowflakeResponse{
		TimestampMs: tsMs,
		Time:        formatMs(tsMs),
		WorkerId:    id >> l.workerShift & l.workerMask,
		Sequence:    id & l.seqMask,
	}, nil
}

func formatMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
