package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stsPods runs pods of the storesvr StatefulSet in podman as the
// manifest writes them (see runStatefulSet), each with a named volume for
// its data dir, so that a pod restarted with other args (a kubectl patch)
// keeps its PVC.
type stsPods struct {
	t        *testing.T
	e        *engine
	image    string
	prefix   string
	name     string // the StatefulSet's name: pods are name-N
	domain   string
	args     []string
	httpPort int32
	url0     string // pod 0's API on the host
	running  map[int]string
}

func newSTSPods(t *testing.T, e *engine, image, prefix string) *stsPods {
	m := readManifests(t)
	ss := m.sets[0]
	c := ss.Spec.Template.Spec.Containers[0]
	p := &stsPods{t: t, e: e, image: image, prefix: prefix, name: ss.Name, domain: flagValue(c.Args, "ordinal-domain"),
		httpPort: listenPort(t, flagValue(c.Args, "http-addr")), running: map[int]string{}}
	for _, a := range c.Args {
		if !strings.Contains(a, "=/etc/seqsvr/") { // a Secret's file: no Secrets here
			p.args = append(p.args, a)
		}
	}
	if c.Command[0] != "storesvr" {
		t.Fatalf("StatefulSet runs %v", c.Command)
	}
	createNetwork(t, e, prefix)
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range p.running {
				// The servers log to stderr, which podman logs writes to its own.
				out, _ := exec.Command(e.bin, append(append([]string{}, e.global...), "logs", "--tail", "30", n)...).CombinedOutput()
				t.Logf("---- %s ----\n%s", n, out)
			}
		}
		for ord := range p.running {
			p.stop(ord)
		}
		out, _ := e.cmd(time.Minute, "volume", "ls", "-q", "--filter", "name="+prefix)
		for _, v := range strings.Fields(string(out)) {
			e.cmd(time.Minute, "volume", "rm", "-f", v)
		}
	})
	return p
}

// start runs pod ord with the manifest's args and extra (a patch's,
// after them: the last flag wins), and the podman flags of mounts.
func (p *stsPods) start(ord int, extra []string, mounts ...string) {
	p.t.Helper()
	host := fmt.Sprintf("%s-%d", p.name, ord)
	name := p.prefix + "-" + host
	run := append([]string{"run", "-d", "--name", name, "--network", p.prefix,
		"--hostname", host, "--network-alias", host + "." + p.domain,
		"-v", name + "-data:/var/lib/seqsvr"}, p.e.run...)
	run = append(run, mounts...)
	if ord == 0 {
		addr := freeAddr(p.t)
		run = append(run, "-p", fmt.Sprintf("%s:%d", addr, p.httpPort))
		p.url0 = "http://" + addr
	}
	run = append(append(append(append(run, p.image), "storesvr"), p.args...), extra...)
	p.e.must(time.Minute, run...)
	p.running[ord] = name
}

// stop removes pod ord's container; its volume (its PVC) stays.
func (p *stsPods) stop(ord int) {
	if n, ok := p.running[ord]; ok {
		p.e.cmd(2*time.Minute, "rm", "-f", "-t", "2", n)
		delete(p.running, ord)
	}
}

// deletePVC removes pod ord's volume, as `kubectl delete pvc` does.
func (p *stsPods) deletePVC(ord int) {
	p.e.must(time.Minute, "volume", "rm", "-f", fmt.Sprintf("%s-%s-%d-data", p.prefix, p.name, ord))
}

// waitMembers waits until pod 0's ClusterStatus names a leader and n
// members, and returns the cluster ID.
func (p *stsPods) waitMembers(ctx context.Context, n int) (clusterID string) {
	p.t.Helper()
	var st struct {
		LeaderID  string `json:"leaderId"`
		ClusterID string `json:"clusterId"`
		Members   []struct{ ID string }
	}
	for {
		st.LeaderID, st.Members = "", nil
		postOK(ctx, p.t, p.url0+"/seqsvr.v1.StoreService/ClusterStatus", `{}`, &st)
		if st.LeaderID != "" && len(st.Members) == n && st.ClusterID != "" {
			return st.ClusterID
		}
		select {
		case <-ctx.Done():
			p.t.Fatalf("ClusterStatus %+v, want %d members and a leader", st, n)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runStatefulSetRestore runs docs/deploy.md's Kubernetes restore
// runbook on the StatefulSet's pods: a cluster reserves IDs, the backup
// CronJob's container runs once against it (runBackupCronJob), and it is
// backed up with seqctl from outside; the StatefulSet is scaled to 0 and its
// PVCs deleted; ordinal 0 alone restores the backup (--restore and
// --ordinal-initial=1 patched in); it restarts without --restore; the
// other ordinals, with empty PVCs, join it instead of bootstrapping. The
// result is one 3-member cluster with a new cluster ID whose tag
// continues above the IDs reserved before the backup.
func runStatefulSetRestore(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("seqsvr-rb-%d", os.Getpid())
	p := newSTSPods(t, e, image, prefix)
	for ord := range 3 {
		p.start(ord, nil)
	}
	oldID := p.waitMembers(ctx, 3)
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"rb"}`, nil)
	var seg struct{ First, Last string }
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"rb","size":"10"}`, &seg)

	// The scheduled backup, in the image, as the CronJob runs it.
	runBackupCronJob(t, p)
	// The backup, from outside the pods (seqctl through the API).
	restoreDir := t.TempDir()
	if err := os.Chmod(restoreDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(restoreDir, "backup.bak")
	seqctl := exec.CommandContext(ctx, filepath.Join(binDir, "seqctl"), "backup", bak)
	seqctl.Env = append(os.Environ(), "SEQCTL_STORE="+p.url0)
	if out, err := seqctl.CombinedOutput(); err != nil {
		t.Fatalf("seqctl backup: %v\n%s", err, out)
	}
	if err := os.Chmod(bak, 0o644); err != nil { // the pod's user reads it
		t.Fatal(err)
	}

	// Scale to 0, delete the PVCs.
	for ord := range 3 {
		p.stop(ord)
		p.deletePVC(ord)
	}
	// Ordinal 0 alone, patched: --restore, --ordinal-initial=1.
	patch := []string{"--ordinal-initial=1"}
	p.start(0, append([]string{"--restore=/etc/seqsvr/restore/backup.bak"}, patch...), "-v", restoreDir+":/etc/seqsvr/restore:ro")
	newID := p.waitMembers(ctx, 1)
	if newID == oldID {
		t.Fatalf("the restored cluster has the old cluster ID %s", oldID)
	}
	// --restore taken out again; ordinal 0 restarts from its PVC, and
	// the others, with empty PVCs, join it.
	first := p.rejoinAndContinue(ctx, patch, newID, "restored", "rb", seg.Last)
	t.Logf("restore runbook on the StatefulSet: cluster %s restored as %s on storesvr-0, 2 pods joined it; tag rb continues at %s (before: up to %s)", oldID, newID, first, seg.Last)
}

// runBackupCronJob runs the backup CronJob's container once, as its
// manifest writes it, from the image on the pods' network: its command
// and args, its backups volume a directory of the test, SEQCTL_STORE
// naming pod 0 (no Service here) and, as everywhere in these podman runs,
// no Secret (so no token file and no CA). It returns the backup written,
// which the host's seqctl backup inspect reads.
func runBackupCronJob(t *testing.T, p *stsPods) string {
	t.Helper()
	m := readManifests(t)
	if len(m.cronJobs) != 1 {
		t.Fatalf("%d CronJobs", len(m.cronJobs))
	}
	c := m.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // the pod's user writes there
		t.Fatal(err)
	}
	run := append([]string{"run", "--rm", "--network", p.prefix}, p.e.run...)
	for _, vm := range c.VolumeMounts {
		if vm.Name == "backups" {
			run = append(run, "-v", dir+":"+vm.MountPath)
		}
	}
	for _, env := range c.Env {
		switch env.Name {
		case "SEQCTL_STORE":
			run = append(run, "-e", fmt.Sprintf("SEQCTL_STORE=http://%s-0.%s:%d", p.name, p.domain, p.httpPort))
		case "SEQCTL_TOKEN_FILE", "SEQCTL_CA":
		default:
			run = append(run, "-e", env.Name+"="+env.Value)
		}
	}
	run = append(append(append(run, p.image), c.Command...), c.Args...)
	p.e.must(2*time.Minute, run...)
	files, _ := filepath.Glob(filepath.Join(dir, "seqsvr-*.bak"))
	if len(files) != 1 {
		t.Fatalf("the CronJob's run left %v", files)
	}
	out, err := exec.Command(filepath.Join(binDir, "seqctl"), "backup", "inspect", files[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("seqctl backup inspect of the CronJob's backup: %v\n%s", err, out)
	}
	t.Logf("the backup CronJob's container (%v %v) ran once against the StatefulSet:\n%s", c.Command, c.Args, out)
	return files[0]
}

// rejoinAndContinue is a runbook's last steps on the StatefulSet's pods:
// ordinal 0 restarts from its PVC without the one-off flag, the other
// ordinals start on empty PVCs and join it, the cluster keeps newID
// (what: "restored", "recovered"), and tag, reserved up to beforeLast
// before, continues above it. It answers the first ID reserved after.
func (p *stsPods) rejoinAndContinue(ctx context.Context, patch []string, newID, what, tag, beforeLast string) string {
	t := p.t
	p.stop(0)
	p.start(0, patch)
	for ord := 1; ord < 3; ord++ {
		p.start(ord, patch)
	}
	if id := p.waitMembers(ctx, 3); id != newID {
		t.Fatalf("after the scale-up the cluster ID is %s, want the %s %s", id, what, newID)
	}
	var after struct{ First, Last string }
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"`+tag+`","size":"10"}`, &after)
	var first, last int64
	fmt.Sscan(after.First, &first)
	fmt.Sscan(beforeLast, &last)
	if first <= last {
		t.Fatalf("after the %s cluster the tag continues at %s, not above %s reserved before", what, after.First, beforeLast)
	}
	return after.First
}
