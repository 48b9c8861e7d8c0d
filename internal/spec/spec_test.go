package spec

import (
	"errors"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/errs"
)

func TestCheckTag(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want string // "" = valid, else a substring of the error
	}{
		{"order", ""},
		{"a.b:c-d_e09", ""},
		{strings.Repeat("x", MaxTagLen), ""},
		{"", "empty"},
		{strings.Repeat("x", MaxTagLen+1), "129 bytes"},
		{"bad tag", "' ' at byte 3"},
		{"ünï", "at byte 0"},
		{"a/b", "'/'"},
	} {
		err := CheckTag(tc.tag)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckTag(%q) = %v, want valid", tc.tag, err)
		case tc.want != "" && (!errors.Is(err, errs.InvalidArgument) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckTag(%q) = %v, want an error containing %q", tc.tag, err, tc.want)
		}
	}
}

func TestCheckCount(t *testing.T) {
	for _, c := range []struct {
		in   int32
		want int
		ok   bool
	}{{0, 1, true}, {1, 1, true}, {MaxCount, MaxCount, true}, {-1, 0, false}, {MaxCount + 1, 0, false}, {-1 << 30, 0, false}} {
		got, err := CheckCount(c.in)
		if got != c.want || (err == nil) != c.ok || (err != nil && !errors.Is(err, errs.InvalidArgument)) {
			t.Errorf("CheckCount(%d) = %d, %v", c.in, got, err)
		}
	}
}

func TestDefaultLayoutFits(t *testing.T) {
	l := DefaultLayout()
	if l.GetTimestampBits()+l.GetWorkerBits()+l.GetSequenceBits() != 63 || l.GetEpochMs() != DefaultEpochMs {
		t.Fatalf("default layout %v does not fill 63 bits", l)
	}
	if DefaultLayout() == l {
		t.Fatal("DefaultLayout must return a fresh copy")
	}
}

func TestSectionCount(t *testing.T) {
	for _, c := range []struct{ keys, size, want uint64 }{
		{1, 1, 1}, {1, 100, 1}, {100, 100, 1}, {101, 100, 2}, {DefaultKeyCount, DefaultSectionSize, 42950},
		{^uint64(0), 1 << 63, 2},
	} {
		if got := SectionCount(c.keys, c.size); got != c.want {
			t.Errorf("SectionCount(%d, %d) = %d, want %d", c.keys, c.size, got, c.want)
		}
	}
}
