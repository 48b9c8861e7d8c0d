package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func clusterCmd(id string) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterId: id}}}
}

// The first cluster ID applied wins, and it survives a snapshot.
func TestClusterIDFirstWins(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1000, clusterCmd("aaaa"))
	mustApply(t, f, 1001, clusterCmd("bbbb"))
	if got := f.ClusterID(); got != "aaaa" {
		t.Fatalf("cluster ID %q, want aaaa", got)
	}
	g := roundTrip(t, f)
	if got := g.ClusterID(); got != "aaaa" {
		t.Fatalf("after restore: cluster ID %q, want aaaa", got)
	}
	if st := g.State(); st.GetLastNowMs() != 1001 || st.GetFormatVersion() != FormatVersion {
		t.Fatalf("last_now_ms %d, format %d", st.GetLastNowMs(), st.GetFormatVersion())
	}
}

func roundTrip(t *testing.T, f *Machine) *Machine {
	t.Helper()
	g := New(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(persist(t, f)))); err != nil {
		t.Fatal(err)
	}
	return g
}

// A snapshot of a newer format is refused, naming both versions.
func TestRestoreRefusesNewerFormat(t *testing.T) {
	b, _ := proto.Marshal(&seqsvrv1.FSMSnapshot{FormatVersion: FormatVersion + 1})
	err := New(nil).Restore(io.NopCloser(bytes.NewReader(b)))
	if !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("err %v, want ErrNewerFormat", err)
	}
}

// Rates: the peak of a tag reserving 1000 IDs a second is about 1000/s,
// measured from now_ms only; it carries over a delete and a re-create.
func TestTagRate(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 0, createCmd("order", 0, 1000))
	for now := int64(0); now <= 300_000; now += 1000 {
		mustApply(t, f, now, reserveCmd("order", 0, "", 0))
	}
	peak := f.State().GetTags()[0].GetRate().GetPeakPerSec()
	if peak < 1000 || peak > 1100 {
		t.Fatalf("peak %d/s, want about 1000/s", peak)
	}
	mustApply(t, f, 300_001, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: "order"}}})
	st := roundTrip(t, f).State()
	if got := st.GetTombstones()[0].GetRate().GetPeakPerSec(); got != peak {
		t.Fatalf("tombstone peak %d, want %d", got, peak)
	}
	g := roundTrip(t, f)
	mustApply(t, g, 300_002, createCmd("order", 0, 1000))
	if got := g.State().GetTags()[0].GetRate().GetPeakPerSec(); got != peak {
		t.Fatalf("re-created tag's peak %d, want %d", got, peak)
	}
}

func TestSectionRate(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 0, spaceCmd("chat", 100, 10, 100))
	mustApply(t, f, 0, hbCmd("a", "i1", false))
	known := int64(-1)
	for now := int64(0); now < 120_000; now += 100 {
		mustApply(t, f, now, hbCmd("a", "i1", false))
		r := mustApply(t, f, now, raiseCmd("a", "i1", "chat", 0, known))
		known = r.Raise.GetSections()[0].GetMaxSeq()
	}
	var peak int64
	for _, sp := range f.State().GetSpaces() {
		for _, m := range sp.GetMaxes() {
			peak = max(peak, m.GetRate().GetPeakPerSec())
		}
	}
	// One raise of 100 every 100 ms: 1000/s.
	if peak < 1000 || peak > 1100 {
		t.Fatalf("section peak %d/s, want about 1000/s", peak)
	}
}

// Before the restore fence no worker ID and no section is granted; after
// it both are.
func TestRestoreFence(t *testing.T) {
	f := New(nil)
	f.st.restoreFenceMs = 10_000
	wantErr(t, f, 9_999, registerCmd("n1", "i1", 9_999, 1000, 1000), ErrRestoreFence)
	mustApply(t, f, 0, spaceCmd("chat", 100, 10, 100))
	mustApply(t, f, 9_000, hbCmd("a", "i1", false))
	wantErr(t, f, 9_000, raiseCmd("a", "i1", "chat", 0, -1), ErrNotSectionOwner)
	mustApply(t, f, 10_000, registerCmd("n1", "i1", 10_000, 1000, 1000))
	mustApply(t, f, 10_000, hbCmd("a", "i1", false))
	mustApply(t, f, 10_000, raiseCmd("a", "i1", "chat", 0, -1))
}

func TestPerSecond(t *testing.T) {
	for _, c := range []struct{ delta, ms, want int64 }{
		{0, 1000, 0}, {1, 60_000, 1}, {60_000, 60_000, 1000}, {60_001, 60_000, 1001}, {-5, 1000, 0}, {1 << 62, 1000, 1<<62/1000*1000 + 1000},
	} {
		if got := PerSecond(c.delta, c.ms); got != c.want {
			t.Errorf("PerSecond(%d, %d) = %d, want %d", c.delta, c.ms, got, c.want)
		}
	}
}

// withoutLast is st without the record of the last command applied (its
// index, term and time), which every command moves, refused or not.
func withoutLast(st *seqsvrv1.FSMSnapshot) *seqsvrv1.FSMSnapshot {
	st.LastIndex, st.LastTerm, st.LastNowMs = 0, 0, 0
	return st
}
