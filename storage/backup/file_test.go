package backup

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

func sample() *seqsvrv1.Backup {
	return &seqsvrv1.Backup{
		ClusterId: "c1", RaftIndex: 42, RaftTerm: 3, LeaderTimeMs: 1_700_000_000_000, LeaderId: "s1", MaxSegmentSize: 1000,
		State: &seqsvrv1.FSMSnapshot{
			Tags:       []*seqsvrv1.TagState{{Tag: "order", MaxId: 10400, Step: 100, Rate: &seqsvrv1.RateState{PeakPerSec: 1000}}},
			Tombstones: []*seqsvrv1.TagState{{Tag: "gone", MaxId: 7}},
			Spaces: []*seqsvrv1.SpaceState{{Space: "chat", KeyCount: 100, SectionSize: 10, Step: 5,
				Maxes: []*seqsvrv1.SectionMaxState{{Section: 1, MaxSeq: 50, UsedTracked: true, Used: []byte{3}}}}},
			Workers:   []*seqsvrv1.WorkerState{{NodeId: "a1", WorkerId: 1, LastTimestampMs: 5}},
			ClusterId: "c1",
		},
	}
}

func TestRoundTrip(t *testing.T) {
	in := sample()
	file, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Fatalf("round trip:\n%v\n%v", in, out)
	}
	if out.GetState().GetFormatVersion() != fsm.FormatVersion {
		t.Fatalf("state format %d", out.GetState().GetFormatVersion())
	}
	s := Summarize(out, len(file))
	if len(s.Tags) != 1 || s.Tags[0].PeakPerSec != 1000 || s.Spaces[0].UsedKeys != 2 || s.Spaces[0].Sections != 10 {
		t.Fatalf("summary %+v", s)
	}
}

// Every damage is refused with the error naming it.
func TestRefusals(t *testing.T) {
	file, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	future := func(b []byte) []byte { binary.BigEndian.PutUint32(b[len(magic):], FormatVersion+1); return b }
	flip := func(i int) func([]byte) []byte {
		return func(b []byte) []byte { b[i] ^= 1; return b }
	}
	newerState := sample()
	newerState.State.FormatVersion = fsm.FormatVersion + 1
	payload, _ := proto.Marshal(newerState)
	frame := append([]byte(magic), 0, 0, 0, FormatVersion)
	frame = binary.BigEndian.AppendUint64(frame, uint64(len(payload)))
	frame = append(frame, payload...)
	cases := []struct {
		name string
		file []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"half a magic", file[:4], ErrTruncated},
		{"header only", file[:headerLen], ErrTruncated},
		{"cut by one byte", file[:len(file)-1], ErrTruncated},
		{"cut in the payload", file[:headerLen+5], ErrTruncated},
		{"a payload byte changed", flip(headerLen + 3)(clone(file)), ErrCorrupt},
		{"the checksum changed", flip(len(file) - 1)(clone(file)), ErrCorrupt},
		{"trailing bytes", append(clone(file), 0), ErrCorrupt},
		{"not a backup", []byte("hello, world: not a backup at all"), ErrNotBackup},
		{"newer frame", future(clone(file)), ErrFutureVersion},
		{"newer state", withSum(frame), ErrFutureVersion},
	}
	for _, c := range cases {
		if _, err := Decode(c.file); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

func withSum(b []byte) []byte { return append(b, sha(b)...) }

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// A payload length so large that the frame's size wraps around is named
// as the header gives it, not as the wrapped sum.
func TestOverflowedLengthNamed(t *testing.T) {
	file, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	n := ^uint64(0) - uint64(headerLen+sumLen) + 42 // header + n + sum wraps to 41
	binary.BigEndian.PutUint64(file[len(magic)+4:], n)
	_, err = Decode(file)
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), fmt.Sprint(n)) || strings.Contains(err.Error(), "announces 41") {
		t.Fatalf("got %v, want ErrTruncated naming the announced length %d", err, n)
	}
}

// A summary of a file with a time that RFC 3339 cannot show still
// marshals, showing the number.
func TestSummaryOfAnyTimeMarshals(t *testing.T) {
	for _, ms := range []int64{0, -1, math.MaxInt64, math.MinInt64, 1_700_000_000_000} {
		b := sample()
		b.LeaderTimeMs = ms
		out, err := json.Marshal(Summarize(b, 1))
		if err != nil || !strings.Contains(string(out), fmt.Sprintf(`"time_ms":%d`, ms)) {
			t.Errorf("time %d ms: %s %v", ms, out, err)
		}
	}
}
