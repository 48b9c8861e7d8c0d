package doctest

import (
	"fmt"
	"strings"
	"testing"
)

const operationsDoc = "docs/operations.md"

// byHand is a running cluster that docs/operations.md's "A cluster by
// hand" started: the PIDs of s1, s2, s3 and the allocsvr.
type byHand struct {
	s1, s2, s3, alloc int
}

// startByHand runs the block of "A cluster by hand" (make build dropped;
// its ports, data/ and bin/ the site's) and waits until the three members
// report each other as voters with a leader and the allocsvr is ready.
func (s *site) startByHand() byHand {
	s.t.Helper()
	blocks := shBlocks(s.t, operationsDoc, "A cluster by hand", 1)
	script := s.rewrite(blocks[0], dropMakeBuild(), s.localPorts(), s.dataDirs(), s.binDir())
	pids := s.startBackground("cluster-by-hand", script)
	if len(pids) != 4 {
		s.t.Fatalf("A cluster by hand started %d processes, want 4 (s1, s2, s3, an allocsvr)", len(pids))
	}
	for _, h := range s.hosts[:3] {
		s.waitMembers(h, "s1", "s2", "s3")
	}
	s.waitReady(fmt.Sprintf("http://127.0.0.1:%d", s.alloc))
	return byHand{pids[0], pids[1], pids[2], pids[3]}
}

// TestClusterByHand: the three storesvrs of "A cluster by hand" bootstrap
// one cluster from the same --peers (every member reports s1, s2, s3 as
// voters, a leader, one cluster ID, generation 0) and its allocsvr
// reaches it (ready, following that cluster).
func TestClusterByHand(t *testing.T) {
	s := newSite(t)
	s.startByHand()
	var id string
	for _, h := range s.hosts[:3] {
		st := s.waitMembers(h, "s1", "s2", "s3")
		if id == "" {
			id = st.ClusterID
		}
		if st.ClusterID != id || st.generation() != 0 {
			t.Fatalf("%s: cluster %s generation %d, want %s generation 0", h.id, st.ClusterID, st.generation(), id)
		}
	}
	s.waitAllocFollows(id)
}

// TestPerKeySeqCurl runs the curl calls of "Per-key sequences with curl"
// against the cluster of "A cluster by hand" (`make run` starts the same
// shape on the same ports: devcluster's three members and an allocsvr)
// and compares what each call printed with the output the block shows
// after it (white space aside: protojson varies its spacing).
func TestPerKeySeqCurl(t *testing.T) {
	s := newSite(t)
	s.startByHand()
	blocks := shBlocks(t, operationsDoc, "Per-key sequences with curl", 1)
	script := s.rewrite(blocks[0], s.localPorts())
	// A marker after each command splits the output by command.
	const marker = "@@doctest-end-of-command@@"
	cmds := steps(script)
	var b strings.Builder
	shown := 0
	for _, c := range cmds {
		b.WriteString(c.cmd + "echo; echo " + marker + "\n")
		if len(c.want) > 0 {
			shown++
		}
	}
	if shown < 3 {
		t.Fatalf("the block shows the output of %d calls, want 3 or more (the doc changed?):\n%s", shown, script)
	}
	out := strings.Split(s.run("per-key-curl", b.String()), marker+"\n")
	if len(out) != len(cmds)+1 {
		t.Fatalf("%d outputs for %d commands:\n%q", len(out)-1, len(cmds), out)
	}
	for i, c := range cmds {
		got, want := squash(out[i]), squash(strings.Join(c.want, "\n"))
		if len(c.want) == 0 {
			t.Logf("%s-> %s (the block shows no output)", c.cmd, strings.TrimSpace(out[i]))
			continue
		}
		if got != want {
			t.Errorf("%sprinted %s, the doc shows %s", c.cmd, strings.TrimSpace(out[i]), strings.Join(c.want, "\n"))
		}
	}
}

// squash drops all white space.
func squash(s string) string { return strings.Join(strings.Fields(s), "") }

// TestAddRemoveMember runs "Adding and removing members" on a cluster of
// "A cluster by hand": its first command starts s4 with --join, which
// joins and is promoted to voter (the prose: once caught up); then the
// rest of the block, the RemoveMember call, leaves s1, s2, s3.
func TestAddRemoveMember(t *testing.T) {
	s := newSite(t)
	s.startByHand()
	blocks := shBlocks(t, operationsDoc, "Adding and removing members", 1)
	script := s.rewrite(blocks[0], s.localPorts(), s.dataDirs(), s.binDir())
	cmds := steps(script)
	if len(cmds) < 2 || !strings.Contains(cmds[0].cmd, "--join") || !strings.HasSuffix(strings.TrimSpace(cmds[0].cmd), "&") {
		t.Fatalf("the block no longer starts with a storesvr joining in the background, then more:\n%s", script)
	}
	s4 := s.startBackground("join-s4", cmds[0].cmd)
	s.waitMembers(s.host("s1"), "s1", "s2", "s3", "s4")
	s.mayExit(s4[0]) // what a removed member does is not this block's
	var rest strings.Builder
	for _, c := range cmds[1:] {
		rest.WriteString(c.cmd)
	}
	out := s.run("remove-s4", rest.String())
	if !strings.Contains(out, `"s1"`) || strings.Contains(out, `"s4"`) {
		t.Errorf("RemoveMember answered %s, want the members without s4", out)
	}
	for _, h := range s.hosts[:3] {
		s.waitMembers(h, "s1", "s2", "s3")
	}
}
