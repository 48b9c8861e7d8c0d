package seq

import (
	"context"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// ErrNotOwner answers NextSeqHere when another allocsvr serves the key's
// section: nothing was taken, the caller forwards the call its own way.
var ErrNotOwner = errs.New(errs.Unavailable, "another allocsvr serves this key's section")

// NextSeq hands out key's next value: Next for one key, with the same
// checks, errors and answers, but without Next's per-call slices. When
// this Node serves the key's section and has it loaded it allocates
// nothing: table, owner, section (by number, dir.go), then the value. It is the call the
// SeqService NextSeq handler and the Leaf GETs make.
func (n *Node) NextSeq(ctx context.Context, space string, key uint64, forwarded bool) (int64, uint64, error) {
	return n.one(ctx, opNext, space, key, forwarded, false)
}

// CurrentSeq is Current for one key, the way NextSeq is Next for one.
func (n *Node) CurrentSeq(ctx context.Context, space string, key uint64, forwarded bool) (int64, uint64, error) {
	return n.one(ctx, opCurrent, space, key, forwarded, false)
}

// NextSeqHere is NextSeq served only from this Node: where NextSeq would
// forward the call it answers ErrNotOwner instead, having taken nothing.
// Every other answer is NextSeq's (the HTTP/1.1 front serves with it and
// leaves forwarding to the SeqService handler).
func (n *Node) NextSeqHere(ctx context.Context, space string, key uint64) (int64, uint64, error) {
	return n.one(ctx, opNext, space, key, false, true)
}

// one serves one key as call does (the same checks in the same order, so
// the same error for the same input), forwarding unless here.
func (n *Node) one(ctx context.Context, o op, space string, key uint64, forwarded, here bool) (int64, uint64, error) {
	if o == opNext {
		if v, ver, ok := n.oneFast(space, key); ok {
			return v, ver, nil
		}
	}
	if err := spec.CheckTag(space); err != nil {
		return 0, 0, err
	}
	t, err := n.loadTables().get(space)
	if err != nil {
		return 0, 0, err
	}
	sec, err := t.section(key)
	if err != nil {
		return 0, 0, err
	}
	owner, url, err := n.route(t, sec, forwarded)
	if err != nil {
		return 0, 0, err
	}
	if url != "" {
		if here {
			return 0, 0, ErrNotOwner
		}
		var out [1]int64
		v, err := n.forward(ctx, o, space, []uint64{key}, part{owner: owner, url: url, idx: []int{0}}, out[:])
		if err != nil {
			return 0, 0, err
		}
		return out[0], max(t.version(), v), nil
	}
	s := t.dir.get(sec)
	if s == nil {
		if s, err = n.section(secKey{space: t.msg.GetSpace(), section: sec}); err != nil {
			return 0, 0, err
		}
	}
	v, err := n.take(ctx, s, int(key-sec*t.msg.GetSectionSize()), o)
	if err != nil {
		return 0, 0, err
	}
	return v, t.version(), nil
}

// oneFast is NextSeq of a used key of a section this Node has in memory:
// the table by name, the section by number, fastNext. It skips the name
// check (a name in the table is valid) and route: a section still in the
// directory and live under the current lease is one the store has not
// moved, since it moves a section only after its owner dropped it
// (release) or fenced itself (expiry). ok false: nothing was taken, one
// serves the call the full way.
func (n *Node) oneFast(space string, key uint64) (int64, uint64, bool) {
	set := n.tables.Load()
	if set == nil {
		return 0, 0, false
	}
	t := set.find(space)
	if t == nil || t.dir == nil {
		return 0, 0, false
	}
	size := t.size
	if size == 0 || key >= t.keys {
		return 0, 0, false
	}
	sec := key / size
	s := t.dir.get(sec)
	if s == nil {
		return 0, 0, false
	}
	v, ok := n.fastNext(s, int(key-sec*size))
	return v, t.version(), ok
}
