package main

import (
	"errors"
	"strings"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage"
)

// TestPeersGone: the decision of a recovery from the probes: any answer
// refuses, an unreachable member refuses unless --recover-lost names it,
// and --recover-lost must name other members of the cluster.
func TestPeersGone(t *testing.T) {
	cur := &seqsvrv1.FSMSnapshot{ClusterId: "c1", Members: []*seqsvrv1.MemberInfo{{Id: "s1"}, {Id: "s2"}, {Id: "s3"}}}
	alive := storage.PeerProbe{ID: "s2", Answered: []string{"HTTP h:1: 401 Unauthorized"}, Unreached: []string{"Raft h:2: i/o timeout"}}
	gone := func(id string) storage.PeerProbe {
		return storage.PeerProbe{ID: id, Unreached: []string{"HTTP x: connection refused"}}
	}
	for _, tc := range []struct {
		name   string
		probes []storage.PeerProbe
		lost   []string
		want   string // "" for going on
	}{
		{"one answers", []storage.PeerProbe{alive, gone("s3")}, []string{"s3"}, "answer: s2 (HTTP h:1: 401 Unauthorized)"},
		{"answers though named lost", []storage.PeerProbe{alive, gone("s3")}, []string{"s2", "s3"}, "[named by --recover-lost]"},
		{"unreached, not named", []storage.PeerProbe{gone("s2"), gone("s3")}, nil, "cannot be reached: s2 (HTTP x: connection refused), s3"},
		{"one named, not the other", []storage.PeerProbe{gone("s2"), gone("s3")}, []string{"s2"}, "cannot be reached: s3 ("},
		{"all named", []storage.PeerProbe{gone("s2"), gone("s3")}, []string{"s2", "s3"}, ""},
		{"not a member", []storage.PeerProbe{gone("s2"), gone("s3")}, []string{"s2", "s3", "s9"}, "names s9, which is not a member of cluster c1 (members: s1, s2, s3)"},
		{"this member", []storage.PeerProbe{gone("s2"), gone("s3")}, []string{"s1", "s2", "s3"}, "names s1, this member"},
	} {
		err := peersGone(tc.probes, tc.lost, cur, "s1")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want to go on", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, storage.ErrRewrite)):
			t.Errorf("%s: %v, want ErrRewrite with %q", tc.name, err, tc.want)
		}
	}
}
