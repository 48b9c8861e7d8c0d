package fsm

import (
	"bytes"
	"errors"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

func firstUseCmd(node, instance, space string, sec uint64, offsets ...uint32) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: &seqsvrv1.RaiseSectionsCommand{
		NodeId: node, InstanceId: instance, Space: space,
		Sections: []*seqsvrv1.SectionRaise{{Section: sec, FirstUse: offsets, KeepMax: true}},
	}}}
}

// TestFSMUsedSets: first_use marks go into the section's durable used-set
// without moving max_seq; a later first load answers the set (so the next
// owner reads 0 only for keys never used); offsets outside the section
// are refused; the set survives a snapshot; a section raised before
// used-sets existed answers all_used.
func TestFSMUsedSets(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1000, spaceCmd("u", 25, 10, 100)) // sections of 10, 10, 5 keys
	mustApply(t, f, 1000, hbCmd("a", "a1", false))

	load := func(f *Machine, sec uint64) *seqsvrv1.SectionMax {
		t.Helper()
		return mustApply(t, f, 1010, raiseCmd("a", "a1", "u", int64(sec), -1)).Raise.GetSections()[0]
	}
	if m := load(f, 0); m.GetPrevMax() != 0 || m.GetMaxSeq() != 100 || m.GetUsed() != nil || m.GetAllUsed() {
		t.Fatalf("first load of a fresh section: %v", m)
	}
	m := mustApply(t, f, 1010, firstUseCmd("a", "a1", "u", 0, 3, 9, 3)).Raise.GetSections()[0]
	if m.GetPrevMax() != 100 || m.GetMaxSeq() != 100 || maxSeq(f, "u", 0) != 100 {
		t.Fatalf("first_use moved max_seq: %v", m)
	}
	for _, bad := range []*seqsvrv1.Command{firstUseCmd("a", "a1", "u", 0, 10), firstUseCmd("a", "a1", "u", 2, 5)} {
		if r := applyAt(t, f, 1010, bad); !errors.Is(r.Err, errs.InvalidArgument) {
			t.Fatalf("offset outside the section: %v", r.Err)
		}
	}
	want := []byte{1 << 3, 1 << 1}
	if m := load(f, 0); !bytes.Equal(m.GetUsed(), want) || m.GetAllUsed() || m.GetPrevMax() != 100 {
		t.Fatalf("load after first uses: %v, want used %08b", m, want)
	}

	// A snapshot keeps the set.
	g := New(nil)
	g.st = stateFromProto(f.st.toProto(), nil)
	if m := load(g, 0); !bytes.Equal(m.GetUsed(), want) {
		t.Fatalf("after a snapshot: used %08b, want %08b", m.GetUsed(), want)
	}

	// Section 1 as an older store left it: raised, no used-set.
	snap := f.st.toProto()
	for _, sp := range snap.GetSpaces() {
		sp.Maxes = append(sp.Maxes, &seqsvrv1.SectionMaxState{Section: 1, MaxSeq: 50})
	}
	h := New(nil)
	h.st = stateFromProto(snap, nil)
	if m := load(h, 1); !m.GetAllUsed() || m.GetPrevMax() != 50 {
		t.Fatalf("legacy section: %v, want all_used from prev_max 50", m)
	}
	if m := load(h, 1); !m.GetAllUsed() {
		t.Fatalf("legacy section stays all_used: %v", m)
	}
}
