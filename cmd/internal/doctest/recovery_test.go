package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const recoveryDoc = "docs/disaster-recovery.md"

// adminToken is the file the Backups block names. The cluster by hand has
// no --auth-file, so any token passes; its role is cmd/seqctl's tests'.
const adminToken = "admin-token-change-me-0003\n"

// lost is what a cluster handed out before it was lost: the tag "order",
// whose IDs up to last were reserved, and the cluster's ID.
type lost struct {
	cluster string
	last    int64
}

// takeBackup runs the block of "Backups" against the running cluster and
// returns the file it wrote and what it printed.
func (s *site) takeBackup() (file, out string) {
	s.t.Helper()
	blocks := shBlocks(s.t, recoveryDoc, "Backups", 1)
	if err := os.WriteFile(filepath.Join(s.root, "admin.token"), []byte(adminToken), 0o600); err != nil {
		s.t.Fatal(err)
	}
	script := s.rewrite(blocks[0], s.hostAddrs(), s.backups(), s.binDir())
	out = s.run("backup", script)
	files, err := filepath.Glob(filepath.Join(s.bak, "*"))
	if err != nil {
		s.t.Fatal(err)
	}
	if len(files) != 1 {
		s.t.Fatalf("the Backups block left %v in /backups/, want one file\n%s", files, out)
	}
	return files[0], out
}

// TestBackups runs the block of "Backups" on a cluster of "A cluster by
// hand" holding the tag "order" with 3000 IDs reserved: one file named
// seqsvr-YYYYMMDDTHHMMSSZ.bak in /backups/, and `backup inspect` shows
// the cluster ID and the tag with its max_id.
func TestBackups(t *testing.T) {
	s := newSite(t)
	s.startByHand()
	s1 := s.host("s1")
	s.createTag(s1, "order")
	_, last := s.reserve(s1, "order", 3)
	st := s.waitMembers(s1, "s1", "s2", "s3")
	file, out := s.takeBackup()
	if !regexp.MustCompile(`^seqsvr-\d{8}T\d{6}Z\.bak$`).MatchString(filepath.Base(file)) {
		t.Errorf("backup file %s, want seqsvr-YYYYMMDDTHHMMSSZ.bak", filepath.Base(file))
	}
	// backup prints the header, inspect the header and every tag.
	if n := strings.Count(out, filepath.Base(file)); n != 2 {
		t.Errorf("the file's name is in the output %d times, want 2 (backup, inspect):\n%s", n, out)
	}
	if !strings.Contains(out, st.ClusterID) {
		t.Errorf("backup inspect does not show cluster ID %s:\n%s", st.ClusterID, out)
	}
	if !regexp.MustCompile(`(?m)^order\s+tag\s+` + strconv.FormatInt(last, 10) + `\s`).MatchString(out) {
		t.Errorf("backup inspect does not show tag order at max %d:\n%s", last, out)
	}
	t.Logf("backup inspect:\n%s", out)
}

// startLost starts a cluster by hand with the tag "order" and 3 segments
// reserved, takes a backup with the Backups block, then reserves 5
// segments more: what the cluster hands out after a backup is not in it.
func (s *site) startLost() (byHand, lost, string) {
	s.t.Helper()
	procs := s.startByHand()
	s1 := s.host("s1")
	s.createTag(s1, "order")
	s.reserve(s1, "order", 3)
	file, _ := s.takeBackup()
	_, last := s.reserve(s1, "order", 5)
	st := s.waitMembers(s1, "s1", "s2", "s3")
	return procs, lost{cluster: st.ClusterID, last: last}, file
}

// wantNewCluster checks what a restore or recovery promises once s1, s2
// and s3 are voters again: a new cluster ID, a generation above 0, the tag
// continuing above every ID the lost cluster handed out, and the
// allocsvr, which kept running, following the new cluster.
func (s *site) wantNewCluster(old lost) {
	s.t.Helper()
	st := s.waitMembers(s.host("s1"), "s1", "s2", "s3")
	if st.ClusterID == old.cluster || st.generation() <= 0 {
		s.t.Fatalf("cluster %s generation %d after it, want a new ID (the lost one: %s) and a generation above 0", st.ClusterID, st.generation(), old.cluster)
	}
	for _, h := range s.hosts[:3] {
		if first, _ := s.reserve(h, "order", 1); first <= old.last {
			s.t.Fatalf("a segment of order reserved through %s starts at %d, at or below %d, which the lost cluster handed out", h.id, first, old.last)
		}
	}
	s.waitAllocFollows(st.ClusterID)
}

// joinOthers runs step 3 of "Restore: the whole store is lost", the second
// block there: s2 and s3 join s1 with empty data dirs. Step 2 of "Quorum
// loss" refers to it.
func (s *site) joinOthers(name string) {
	s.t.Helper()
	blocks := shBlocks(s.t, recoveryDoc, "Restore: the whole store is lost", 2)
	script := s.rewrite(blocks[1], s.hostAddrs(), s.hostDataDirs(), background(), s.binDir())
	if n := len(steps(script)); n != 2 {
		s.t.Fatalf("the join block has %d commands, want 2 (s2, s3):\n%s", n, script)
	}
	s.startBackground(name, script)
}

// TestRestore runs "Restore: the whole store is lost": a cluster by hand
// with the tag "order", backed up by the Backups block, hands out more
// IDs; every storesvr is killed and its data dir emptied (the allocsvr
// keeps running, as step 1 allows); step 2's block restores s1 from the
// backup file; step 3's block joins s2 and s3. The restored cluster has a
// new ID and a higher generation, order continues above every ID the lost
// cluster handed out, and the allocsvr follows the new cluster.
func TestRestore(t *testing.T) {
	s := newSite(t)
	procs, old, file := s.startLost()
	for _, pid := range []int{procs.s1, procs.s2, procs.s3} {
		s.stop(pid, syscall.SIGKILL)
	}
	for _, h := range s.hosts[:3] {
		s.empty(h.data)
	}
	blocks := shBlocks(t, recoveryDoc, "Restore: the whole store is lost", 2)
	script := s.rewrite(blocks[0], backupFile(file), s.hostAddrs(), s.hostDataDirs(), background(), s.binDir())
	s.startBackground("restore-s1", script)
	s.waitMembers(s.host("s1"), "s1")
	s.joinOthers("restore-join")
	s.wantNewCluster(old)
}

// TestQuorumLoss runs "Quorum loss: a majority is gone for good": on a
// cluster by hand with the tag "order", s2 and s3 are killed and their
// data dirs wiped (step 1: they never come back with their data), s1 is
// stopped with SIGTERM, and the block starts it again with --recover
// --recover-lost s2,s3: it continues alone as a one-member cluster; then
// step 2 joins fresh s2 and s3 with the restore's join block. The
// recovered cluster has a new ID and a higher generation, order continues
// above every ID handed out before, and the allocsvr follows it.
func TestQuorumLoss(t *testing.T) {
	s := newSite(t)
	procs, old, _ := s.startLost()
	for _, pid := range []int{procs.s2, procs.s3} {
		s.stop(pid, syscall.SIGKILL)
	}
	for _, h := range s.hosts[1:3] {
		s.empty(h.data)
	}
	s.stop(procs.s1, syscall.SIGTERM)
	blocks := shBlocks(t, recoveryDoc, "Quorum loss: a majority is gone for good", 1)
	script := s.rewrite(blocks[0], s.hostAddrs(), s.hostDataDirs(), background(), s.binDir())
	s.startBackground("recover-s1", script)
	st := s.waitMembers(s.host("s1"), "s1")
	if st.ClusterID == old.cluster {
		t.Fatalf("s1 recovered alone still as cluster %s", st.ClusterID)
	}
	s.joinOthers("recover-join")
	s.wantNewCluster(old)
}
