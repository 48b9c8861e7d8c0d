package checker

import (
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// SnowflakeDecode checks every answered DecodeSnowflake (history.Decode
// ops) against the layout the allocsvrs report: the timestamp, worker ID
// and sequence the service decodes from an ID it handed out must be the
// ones its bits hold. A history without such calls passes with nothing
// checked.
//
// Starting and stopping: only answered decodes are judged; a starting or
// stopping allocsvr's failures are not, and nothing is excused.
func SnowflakeDecode(ops []*history.Op, l Layout) Result {
	const name = SnowflakeDecoded
	var p problems
	n := 0
	for _, op := range ops {
		if op.Kind != history.Decode || !op.OK || op.Decoded == nil || len(op.IDs) != 1 {
			continue
		}
		n++
		id, d := op.IDs[0], op.Decoded
		want := history.Decoded{TimestampMs: l.Timestamp(id), Worker: l.Worker(id), Sequence: id & (1<<l.SequenceBits - 1)}
		if *d != want {
			p.add("op %d on %s (%s): id %d decoded as %+v, its bits hold %+v", op.ID, op.Target, op.PathOf(), id, *d, want)
		}
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d decoded IDs agree with the layout", n)
}
