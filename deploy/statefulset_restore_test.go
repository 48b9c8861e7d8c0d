package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
// keeps its PVC. It is the runbook's podRunner. Every pod's API is
// published on the host at an address kept across its restarts.
type stsPods struct {
	t        *testing.T
	e        *engine
	image    string
	prefix   string
	name     string // the StatefulSet's name: pods are name-N
	domain   string
	args     []string // the manifest's, without the Secret files
	httpPort int32
	url0     string         // pod 0's API on the host
	urls     map[int]string // each pod's
	running  map[int]string
	// Set by useTLS for the pods that run with the Secrets: their API is
	// HTTPS, reached as localhost (the name a port-forward needs in the
	// certificate), with the admin token; run is podman flags of the pod
	// template's securityContext.
	client *http.Client
	token  string
	run    []string
}

func newSTSPods(t *testing.T, e *engine, image, prefix string) *stsPods {
	m := readManifests(t)
	ss := m.sets[0]
	c := ss.Spec.Template.Spec.Containers[0]
	p := &stsPods{t: t, e: e, image: image, prefix: prefix, name: ss.Name, domain: flagValue(c.Args, "ordinal-domain"),
		httpPort: listenPort(t, flagValue(c.Args, "http-addr")), urls: map[int]string{}, running: map[int]string{}, client: http.DefaultClient}
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
// after them: the last flag wins), its data volume, and the podman flags
// of mounts.
func (p *stsPods) start(ord int, extra []string, mounts ...string) {
	p.t.Helper()
	run := []string{"-v", p.pvcVolume(ord, "data") + ":/var/lib/seqsvr"}
	for i := 0; i+1 < len(mounts); i += 2 {
		if mounts[i] != "-v" {
			p.t.Fatalf("start: mounts %v, want -v SPEC pairs", mounts)
		}
		run = append(run, mounts[i+1])
	}
	p.runPod(ord, append(append([]string{}, p.args...), extra...), run[1:])
}

// runPod runs pod ord's container with args and the podman volumes
// (-v specs): hostname name-N, the headless Service's name as a network
// alias, its API published on the host.
func (p *stsPods) runPod(ord int, args, volumes []string) {
	p.t.Helper()
	host := fmt.Sprintf("%s-%d", p.name, ord)
	name := p.prefix + "-" + host
	run := append([]string{"run", "-d", "--name", name, "--network", p.prefix,
		"--hostname", host, "--network-alias", host + "." + p.domain}, p.e.run...)
	for _, v := range volumes {
		run = append(run, "-v", v)
	}
	run = append(run, p.run...)
	if p.urls[ord] == "" {
		p.urls[ord] = "http://" + freeAddr(p.t)
		if p.token != "" {
			p.urls[ord] = "https://localhost:" + p.urls[ord][strings.LastIndexByte(p.urls[ord], ':')+1:]
		}
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(p.urls[ord], "http://"), "https://"), ":")
	run = append(run, "-p", fmt.Sprintf("127.0.0.1:%s:%d", port, p.httpPort))
	if ord == 0 {
		p.url0 = p.urls[0]
	}
	run = append(append(append(run, p.image), "storesvr"), args...)
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

func (p *stsPods) stopPod(ord int) { p.stop(ord) }

func (p *stsPods) pvcVolume(ord int, claim string) string {
	return fmt.Sprintf("%s-%s-%d-%s", p.prefix, p.name, ord, claim)
}

// removeVolume removes a pod's volume, as `kubectl delete pvc` does.
func (p *stsPods) removeVolume(name string) {
	p.e.must(time.Minute, "volume", "rm", "-f", name)
}

func (p *stsPods) url(ord int) string { return p.urls[ord] }

// ready is pod ord's answer to GET path, as a readiness probe sees it.
func (p *stsPods) ready(ctx context.Context, ord int, path string) (bool, string) {
	return probe(ctx, p.client, p.urls[ord]+path)
}

// status is pod ord's ClusterStatus.
func (p *stsPods) status(ctx context.Context, ord int) (stsStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var st stsStatus
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.urls[ord]+"/seqsvr.v1.StoreService/ClusterStatus", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	res, err := p.client.Do(req)
	if err != nil {
		return st, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s", res.Status, b)
	}
	return st, json.Unmarshal(b, &st)
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

// runStatefulSetRestore runs docs/deploy.md's Kubernetes runbook on the
// StatefulSet's pods through the runbook interpreter (runbook_test.go):
// a cluster reserves IDs (the test's setup), the backup CronJob's
// container runs once against it (runBackupCronJob), then the runbook's
// blocks run as written: seqctl from outside, a backup, and the restore
// (the StatefulSet scaled to 0, its PVCs deleted, ordinal 0 alone
// restoring the backup from a Secret, the others joining it, the
// manifest applied back). The result is one 3-member cluster with a new
// cluster ID whose tag continues above the IDs reserved before the
// backup, and the StatefulSet as the manifest defines it.
func runStatefulSetRestore(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	p := newSTSPods(t, e, image, fmt.Sprintf("seqsvr-rb-%d", os.Getpid()))
	rb := newRunbook(t, ctx, p, t.TempDir())
	rb.scaleTo(3) // as installed
	oldID := p.waitMembers(ctx, 3)
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"rb"}`, nil)
	var seg struct{ First, Last string }
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"rb","size":"10"}`, &seg)

	// The scheduled backup, in the image, as the CronJob runs it.
	runBackupCronJob(t, p)
	rb.runBlock(doc, "seqctl from outside the cluster")
	rb.runBlock(doc, "A backup")
	if bak := rb.vars["backup"]; bak == "" {
		t.Fatal("the backup block sets no $backup, which the restore reads")
	} else if _, err := os.Stat(filepath.Join(rb.dir, bak)); err != nil {
		t.Fatalf("the backup block wrote no %s: %v", bak, err)
	}
	rb.runBlock(doc, "Restore into the StatefulSet.")
	newID := rb.newCluster(oldID, "restored")
	first := continueAbove(ctx, t, p, "rb", seg.Last, "restored")
	rb.asManifest()
	t.Logf("restore runbook on the StatefulSet: cluster %s restored as %s on storesvr-0, 2 pods joined it; tag rb continues at %s (before: up to %s)", oldID, newID, first, seg.Last)
}

// newCluster checks what the runbook's waits saw: first ordinal 0 ready
// alone in a cluster that is not oldID, then that cluster at every wait,
// and last with 3 members. It answers the cluster's ID.
func (r *runbook) newCluster(oldID, what string) string {
	t := r.t
	t.Helper()
	if len(r.seen) < 2 {
		t.Fatalf("the runbook waited %d times (%+v): want ordinal 0 ready alone, then a rollout", len(r.seen), r.seen)
	}
	first, last := r.seen[0], r.seen[len(r.seen)-1]
	if first.members != 1 || first.clusterID == oldID {
		t.Fatalf("at %q: %d members of cluster %s, want the %s cluster alone, not %s", first.line, first.members, first.clusterID, what, oldID)
	}
	for _, s := range r.seen {
		if s.clusterID != first.clusterID {
			t.Fatalf("at %q the cluster ID is %s, want the %s %s", s.line, s.clusterID, what, first.clusterID)
		}
	}
	if last.members != 3 {
		t.Fatalf("at %q: %d members, want 3", last.line, last.members)
	}
	return first.clusterID
}

// asManifest fails unless the StatefulSet is back to what the manifest
// defines: the runbook leaves no patch behind.
func (r *runbook) asManifest() {
	r.t.Helper()
	if jsonString(r.set.Spec) != jsonString(r.applied.Spec) {
		a, _ := json.Marshal(r.set.Spec.Template.Spec)
		r.t.Fatalf("the runbook leaves the StatefulSet patched: %s", a)
	}
	if len(r.secrets) > 0 {
		r.t.Fatalf("the runbook leaves Secrets %v", r.secrets)
	}
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

// continueAbove reserves IDs of tag, reserved up to beforeLast before
// the cluster was restored or recovered (what), and fails unless they
// continue above it. It answers the first ID reserved.
func continueAbove(ctx context.Context, t *testing.T, p *stsPods, tag, beforeLast, what string) string {
	t.Helper()
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
