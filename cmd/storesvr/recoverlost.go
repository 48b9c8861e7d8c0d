package main

import (
	"fmt"
	"slices"
	"strings"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage"
)

// peersGone lets a recovery go on only when every other member of cur is
// known to be gone: none answers on its HTTP or Raft address (any answer,
// a TLS alert or a 401 included, means a member is running: a recovery
// beside it would split the cluster), and every one that cannot be
// reached is named in lost (--recover-lost) by the operator, who alone
// can tell a dead host from a cut network.
func peersGone(probes []storage.PeerProbe, lost []string, cur *seqsvrv1.FSMSnapshot, self string) error {
	members := map[string]bool{}
	for _, m := range cur.GetMembers() {
		members[m.GetId()] = true
	}
	for _, id := range lost {
		if id == self {
			return fmt.Errorf("%w: --recover-lost names %s, this member", storage.ErrRewrite, id)
		}
		if !members[id] {
			return fmt.Errorf("%w: --recover-lost names %s, which is not a member of cluster %s (members: %s)",
				storage.ErrRewrite, id, cur.GetClusterId(), strings.Join(sortedKeys(members), ", "))
		}
	}
	var alive, undecided []string
	for _, p := range probes {
		switch {
		case p.Alive():
			what := p.ID + " (" + strings.Join(p.Answered, "; ") + ")"
			if slices.Contains(lost, p.ID) {
				what += " [named by --recover-lost]"
			}
			alive = append(alive, what)
		case !slices.Contains(lost, p.ID):
			undecided = append(undecided, p.ID+" ("+strings.Join(p.Unreached, "; ")+")")
		}
	}
	if len(alive) > 0 {
		return fmt.Errorf("%w: members of cluster %s answer: %s. --recover is only for a member whose peers are gone for good: "+
			"a live cluster would be split. An answer that is an error (a TLS alert, a refused token) still means the member runs: "+
			"check this member's TLS and token flags, and stop those members if they must go",
			storage.ErrRewrite, cur.GetClusterId(), strings.Join(alive, ", "))
	}
	if len(undecided) > 0 {
		var ids []string
		for _, p := range probes {
			if !p.Alive() {
				ids = append(ids, p.ID)
			}
		}
		return fmt.Errorf("%w: members of cluster %s cannot be reached: %s. That does not prove they are gone "+
			"(a dead host and a cut network look alike); if they are lost for good, name them: --recover-lost %s",
			storage.ErrRewrite, cur.GetClusterId(), strings.Join(undecided, ", "), strings.Join(ids, ","))
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
