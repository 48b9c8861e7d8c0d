package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// runbookTitles are the runbook's blocks TestImage runs, by the bold
// title of the paragraph before each.
var runbookTitles = []string{"Install, and every upgrade, in two steps", "seqctl from outside the cluster", "A backup", "Restore into the StatefulSet.", "Quorum loss", "Scale down"}

// TestRunbookParses: every line of the blocks TestImage runs is one the
// interpreter knows (fast, no podman: the doc's edits fail here first).
func TestRunbookParses(t *testing.T) {
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	m := readManifests(t)
	r := newRunbook(t, context.Background(), nil, t.TempDir())
	kinds := map[string]int{}
	for _, title := range runbookTitles {
		lines, err := runbookBlock(doc, title)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			c, err := parseRunbookLine(l, m.sets[0], r.api, map[string]string{"backup": "b.bak"})
			if err != nil {
				t.Errorf("**%s: %q: %v", title, l, err)
			}
			kinds[c.kind]++
		}
	}
	// The restore's patch and the quorum loss's are each joined into one
	// line, and every verb the interpreter knows is used (but wait-ready:
	// right after a scale the pod may not exist yet, so the blocks wait
	// with rollout status).
	for _, k := range []string{cmdScale, cmdWaitDelete, cmdRollout, cmdDeletePVC, cmdCreateSecret, cmdDeleteSecret, cmdApply, cmdApplyFile, cmdRolloutDep, cmdPortForward, cmdExport, cmdAssign, cmdSeqctl} {
		if kinds[k] == 0 {
			t.Errorf("no %s line in the runbook's blocks", k)
		}
	}
	if kinds[cmdPatch] != 4 {
		t.Errorf("%d patch lines, want 4 (each multi-line patch joined into one)", kinds[cmdPatch])
	}
}

func TestRunbookBlockReading(t *testing.T) {
	doc := "# x\n\n## Kubernetes runbook\n\n**Step one.** text\n\n```sh\n# a comment, it's skipped\nkubectl -n seqsvr scale statefulset storesvr --replicas=0   # the lost cluster's\n" +
		"kubectl -n seqsvr patch statefulset storesvr --type=json -p '[\n  {\"op\":\"add\"}]'\n\n```\n\n**Step two** no block\n\n## Next\n\n**Other**\n```sh\nx\n```\n"
	lines, err := runbookBlock(doc, "Step one.")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kubectl -n seqsvr scale statefulset storesvr --replicas=0   # the lost cluster's",
		"kubectl -n seqsvr patch statefulset storesvr --type=json -p '[\n  {\"op\":\"add\"}]'",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("block: %q, want %q", lines, want)
	}
	for _, title := range []string{"Step two", "Other", "Missing"} {
		if _, err := runbookBlock(doc, title); err == nil {
			t.Errorf("**%s: a block found", title)
		}
	}
	if _, err := runbookBlock("## Kubernetes runbook\n**A**\n```sh\nkubectl -p '[\n```\n", "A"); err == nil {
		t.Error("an unclosed quote read as a block")
	}
}

func TestShellWords(t *testing.T) {
	vars := map[string]string{"backup": "seqsvr-1.bak", "sp": "a b"}
	for _, c := range []struct {
		line string
		want []string
		bg   bool
	}{
		{`kubectl -n seqsvr get x   # comment`, []string{"kubectl", "-n", "seqsvr", "get", "x"}, false},
		{`a --from-file=backup.bak="$backup" '[ "$x" ]'`, []string{"a", "--from-file=backup.bak=seqsvr-1.bak", `[ "$x" ]`}, false},
		{`a ${backup} x$backup "$sp"`, []string{"a", "seqsvr-1.bak", "xseqsvr-1.bak", "a b"}, false},
		{`kubectl port-forward service/s 1:1 &`, []string{"kubectl", "port-forward", "service/s", "1:1"}, true},
	} {
		got, bg, err := shellWords(c.line, vars)
		if err != nil || !slices.Equal(got, c.want) || bg != c.bg {
			t.Errorf("%s: %q %v %v, want %q %v", c.line, got, bg, err, c.want, c.bg)
		}
	}
	for _, bad := range []string{`a | b`, `a; b`, `a > f`, `a $(date)`, "a `date`", `a $unset`, `a $sp`, `a *.bak`, `a & b`, `a 'open`, `a "open`, `a \x`} {
		if got, _, err := shellWords(bad, vars); err == nil {
			t.Errorf("%s: read as %q", bad, got)
		}
	}
}

// TestRunbookRefuses: lines the interpreter must not run as if it knew
// them.
func TestRunbookRefuses(t *testing.T) {
	m := readManifests(t)
	r := newRunbook(t, context.Background(), nil, t.TempDir())
	for _, l := range []string{
		`kubectl -n seqsvr exec storesvr-0 -- sh`,                     // a verb not known
		`kubectl -n seqsvr cordon node-1`,                             // a verb not known
		`kubectl scale statefulset storesvr --replicas=3`,             // no -n: the default namespace
		`kubectl -n default scale statefulset storesvr --replicas=3`,  // another namespace
		`kubectl -n seqsvr scale deployment allocsvr --replicas=3`,    // another workload
		`kubectl -n seqsvr scale statefulset storesvr --replicas=x`,   // not a count
		`kubectl -n seqsvr scale statefulset storesvr --replica=3`,    // a misspelt flag
		`kubectl -n seqsvr wait --for=condition=Ready pod/allocsvr-0`, // not a pod of the StatefulSet
		`kubectl -n seqsvr wait --for=condition=Available pod/storesvr-0`,
		`kubectl -n seqsvr delete pvc data-storesvr-x`,
		`kubectl -n seqsvr delete pvc backups-storesvr-0`, // no such claim template
		`kubectl -n seqsvr delete pod storesvr-0`,
		`kubectl -n seqsvr patch statefulset storesvr --type=merge -p '{}'`,
		`kubectl -n seqsvr rollout restart statefulset/storesvr`,
		`kubectl apply -k deploy/kubernetes/backup`,               // not in the runbook's blocks
		`kubectl apply -f deploy/kubernetes/secrets.example.yaml`, // the placeholders
		`kubectl -n seqsvr apply -f deploy/kubernetes/namespace.yaml`,
		`kubectl -n seqsvr rollout status deployment`,
		`kubectl -n seqsvr rollout status deployment/`,
		`kubectl apply -f deploy/kubernetes/storesvr/storesvr.yaml`,
		`kubectl -n seqsvr port-forward service/storesvr-api 8081:8081`, // not in the background
		`kubectl -n seqsvr port-forward service/storesvr-api 8081:9999 &`,
		`kubectl -n seqsvr port-forward service/storesvr 8081:8081 &`,
		`export SEQCTL_STORE_URL=https://localhost:8081`,
		`export SEQCTL_TOKEN_FILE=admin-token`, // no store
		`curl -s http://localhost:8081/readyz`,
		`kubectl -n seqsvr get pods | grep storesvr`,
	} {
		if c, err := parseRunbookLine(l, m.sets[0], r.api, nil); err == nil {
			t.Errorf("%s: read as %s", l, c.kind)
		}
	}
}

// TestRunbookPatches applies the runbook's patches, in order, to the
// manifest's StatefulSet, as the interpreter does: each decodes
// strictly, the one-off flags are in while the survivor runs alone and
// out after, and a bad path, an unknown field, a forbidden update or a
// failed test is refused, leaving the object as it was.
func TestRunbookPatches(t *testing.T) {
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	r := newRunbook(t, context.Background(), nil, t.TempDir())
	manifestArgs := slices.Clone(r.set.Spec.Template.Spec.Containers[0].Args)
	for _, c := range []struct {
		title         string
		oneOff        []string // the args before the manifest's while the survivor runs alone
		volume, mount string
	}{
		{"Restore into the StatefulSet.", []string{"--restore=/etc/seqsvr/restore/backup.bak"}, "restore", "/etc/seqsvr/restore"},
		{"Quorum loss", []string{"--recover", "--recover-lost=storesvr-1,storesvr-2"}, "", ""},
	} {
		lines, err := runbookBlock(doc, c.title)
		if err != nil {
			t.Fatal(err)
		}
		r.set = r.applied.DeepCopy()
		var patches [][]byte
		for _, l := range lines {
			if cmd, err := parseRunbookLine(l, r.set, r.api, map[string]string{"backup": "b.bak"}); err == nil && cmd.kind == cmdPatch {
				patches = append(patches, cmd.patch)
			}
		}
		if len(patches) != 2 {
			t.Fatalf("**%s: %d patches, want the one-off one and the one taking it out", c.title, len(patches))
		}
		if err := r.patch(patches[0]); err != nil {
			t.Fatalf("**%s, first patch: %v", c.title, err)
		}
		spec := r.set.Spec.Template.Spec
		args := spec.Containers[0].Args
		want := append(append(slices.Clone(c.oneOff), manifestArgs...), "--ordinal-initial=1")
		if !slices.Equal(args, want) {
			t.Errorf("**%s: args after the patch %q, want %q", c.title, args, want)
		}
		if c.volume != "" && (spec.Volumes[0].Name != c.volume || spec.Volumes[0].Secret == nil || spec.Containers[0].VolumeMounts[0].MountPath != c.mount) {
			t.Errorf("**%s: volumes %+v, mounts %+v", c.title, spec.Volumes, spec.Containers[0].VolumeMounts)
		}
		if err := r.patch(patches[1]); err != nil {
			t.Fatalf("**%s, second patch: %v", c.title, err)
		}
		wantSpec := r.applied.Spec.DeepCopy()
		wantSpec.Template.Spec.Containers[0].Args = append(slices.Clone(manifestArgs), "--ordinal-initial=1")
		if a, b := jsonString(r.set.Spec), jsonString(wantSpec); a != b {
			t.Errorf("**%s: after both patches\n%s\nwant the manifest with --ordinal-initial=1\n%s", c.title, a, b)
		}
		// The second patch again: its tests now fail, and nothing changes.
		before := jsonString(r.set)
		if err := r.patch(patches[1]); err == nil {
			t.Errorf("**%s: the second patch applied twice", c.title)
		}
		if jsonString(r.set) != before {
			t.Errorf("**%s: a refused patch changed the StatefulSet", c.title)
		}
	}

	r.set = r.applied.DeepCopy()
	before := jsonString(r.set)
	for _, bad := range []string{
		`[{"op":"add","path":"/spec/template/spec/containers/0/argz/-","value":"--x"}]`,                        // no such member
		`[{"op":"add","path":"/spec/template/spec/containers/1/args/-","value":"--x"}]`,                        // no second container
		`[{"op":"add","path":"/spec/template/spec/containers/0/args/99","value":"--x"}]`,                       // past the end
		`[{"op":"add","path":"/spec/template/spec/containers/0/argz","value":["--x"]}]`,                        // unknown field
		`[{"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"r","Secret":{}}}]`,               // a field's case
		`[{"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"r","secret":{"secretName":1}}}]`, // a type
		`[{"op":"add","path":"/spec/template/spec/containers/0/volumeMounts/-","value":{"name":"nope","mountPath":"/x"}}]`,
		`[{"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"auth","secret":{"secretName":"x"}}}]`, // a name taken
		`[{"op":"replace","path":"/spec/serviceName","value":"other"}]`,                                             // forbidden update
		`[{"op":"remove","path":"/spec/template/spec/containers/0/args/-"}]`,
		`[{"op":"move","from":"/a","path":"/b"}]`,
		`[{"op":"test","path":"/spec/replicas","value":4}]`,
		`[{"op":"add","path":"spec/replicas","value":4}]`,
		`{"op":"add","path":"/spec/replicas","value":4}`,
		`[]`,
		// the first operation applies, the second fails: nothing changes
		`[{"op":"replace","path":"/spec/replicas","value":1},{"op":"remove","path":"/spec/nope"}]`,
	} {
		if err := r.patch([]byte(bad)); err == nil {
			t.Errorf("patch %s applied", bad)
		}
		if jsonString(r.set) != before {
			t.Fatalf("the refused patch %s changed the StatefulSet", bad)
		}
	}
}

func TestJSONPatch(t *testing.T) {
	doc := `{"a":[1,2,3],"b":{"c":"d","e/f":1,"g~h":2}}`
	for _, c := range []struct{ patch, want string }{
		{`[{"op":"add","path":"/a/0","value":0}]`, `{"a":[0,1,2,3],"b":{"c":"d","e/f":1,"g~h":2}}`},
		{`[{"op":"add","path":"/a/3","value":4}]`, `{"a":[1,2,3,4],"b":{"c":"d","e/f":1,"g~h":2}}`},
		{`[{"op":"add","path":"/a/-","value":4}]`, `{"a":[1,2,3,4],"b":{"c":"d","e/f":1,"g~h":2}}`},
		{`[{"op":"remove","path":"/a/1"}]`, `{"a":[1,3],"b":{"c":"d","e/f":1,"g~h":2}}`},
		{`[{"op":"replace","path":"/a/2","value":"x"}]`, `{"a":[1,2,"x"],"b":{"c":"d","e/f":1,"g~h":2}}`},
		{`[{"op":"add","path":"/b/c","value":null}]`, `{"a":[1,2,3],"b":{"c":null,"e/f":1,"g~h":2}}`},
		{`[{"op":"remove","path":"/b/e~1f"},{"op":"test","path":"/b/g~0h","value":2}]`, `{"a":[1,2,3],"b":{"c":"d","g~h":2}}`},
		{`[{"op":"add","path":"/n","value":{"x":[1]}},{"op":"add","path":"/n/x/0","value":0}]`, `{"a":[1,2,3],"b":{"c":"d","e/f":1,"g~h":2},"n":{"x":[0,1]}}`},
		{`[{"op":"replace","path":"","value":[1]}]`, `[1]`},
	} {
		got, err := applyJSONPatch([]byte(doc), []byte(c.patch))
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s %v, want %s", c.patch, got, err, c.want)
		}
	}
	for _, bad := range []string{
		`[{"op":"add","path":"/a/4","value":0}]`,
		`[{"op":"add","path":"/a/01","value":0}]`,
		`[{"op":"add","path":"/a/-1","value":0}]`,
		`[{"op":"add","path":"/x/y","value":0}]`,
		`[{"op":"add","path":"/b/c/d","value":0}]`,
		`[{"op":"add","path":"/a/-"}]`,
		`[{"op":"replace","path":"/b/x","value":0}]`,
		`[{"op":"remove","path":"/a/3"}]`,
		`[{"op":"remove","path":"/a/-"}]`,
		`[{"op":"remove","path":"/b/c","value":1}]`,
		`[{"op":"test","path":"/b/c","value":"x"}]`,
		`[{"op":"add","path":"/b/~2","value":0}]`,
		`[{"op":"add","path":"/a/-","value":0,"extra":1}]`,
		`[{"op":"copy","from":"/a","path":"/c"}]`,
		`[{"op":"remove","path":""}]`,
	} {
		if got, err := applyJSONPatch([]byte(doc), []byte(bad)); err == nil {
			t.Errorf("%s applied: %s", bad, got)
		}
	}
}

// fakePods records the pods the runbook starts and stops; a PVC holds a
// member's state once a pod ran on it. Every pod is ready at once and
// answers one cluster of the pods running.
type fakePods struct {
	t       *testing.T
	running map[int][]string // args
	state   map[string]bool  // volumes a pod ran on
	events  []string
	// problems: a start that could split the cluster
	problems []string
}

func (f *fakePods) runPod(ord int, args, vols []string) {
	own := f.pvcVolume(ord, "data")
	if !slices.ContainsFunc(vols, func(v string) bool { return strings.HasPrefix(v, own+":") }) {
		f.problems = append(f.problems, fmt.Sprintf("pod %d starts without its PVC: %v", ord, vols))
	}
	empty, otherState := !f.state[own], false
	for v := range f.state {
		otherState = otherState || v != own
	}
	f.state[own] = true
	initial := 3
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--ordinal-initial="); ok {
			fmt.Sscan(v, &initial)
		}
	}
	oneOff := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--restore=") || a == "--recover" })
	others := len(f.running)
	if _, ok := f.running[ord]; ok {
		others--
	}
	switch {
	case oneOff && others > 0:
		f.problems = append(f.problems, fmt.Sprintf("pod %d starts with a one-off flag beside %d others", ord, others))
	case empty && !oneOff && ord < initial && otherState:
		f.problems = append(f.problems, fmt.Sprintf("pod %d starts on an empty PVC as an initial member (--ordinal-initial=%d) while another PVC holds a cluster: it bootstraps its own", ord, initial))
	}
	f.running[ord] = args
	f.events = append(f.events, fmt.Sprintf("start %d empty=%v %v %v", ord, empty, args, vols))
}

func (f *fakePods) stopPod(ord int) {
	delete(f.running, ord)
	f.events = append(f.events, fmt.Sprintf("stop %d", ord))
}

func (f *fakePods) pvcVolume(ord int, claim string) string {
	return fmt.Sprintf("pvc-%s-%d", claim, ord)
}

func (f *fakePods) removeVolume(name string) {
	delete(f.state, name)
	f.events = append(f.events, "rm "+name)
}

func (f *fakePods) ready(context.Context, int, string) (bool, string) { return true, "" }

func (f *fakePods) status(context.Context, int) (stsStatus, error) {
	st := stsStatus{LeaderID: "storesvr-0", ClusterID: "c"}
	st.Members = make([]struct{ ID string }, len(f.running))
	return st, nil
}

func (f *fakePods) url(int) string { return "http://127.0.0.1:1" }

// runFake runs lines on fakePods from a 3-pod cluster, answering the
// first failing line's error and the starts that could split the cluster.
func runFake(t *testing.T, lines []string) (*runbook, *fakePods, error) {
	f := &fakePods{t: t, running: map[int][]string{}, state: map[string]bool{}}
	dir := t.TempDir()
	r := newRunbook(t, context.Background(), f, dir)
	r.scaleTo(3)
	f.problems = nil // the initial members bootstrap together, each on an empty PVC
	if err := os.WriteFile(filepath.Join(dir, "b.bak"), []byte("backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.vars["backup"] = "b.bak"
	for _, l := range lines {
		if err := r.exec(l); err != nil {
			return r, f, fmt.Errorf("%s: %w", l, err)
		}
	}
	return r, f, nil
}

// TestRunbookOnRecordedPods runs the restore and quorum-loss blocks on
// recorded pods (no podman): no pod starts with --restore or --recover
// beside another, no pod on an empty PVC bootstraps while another PVC
// holds the cluster, and the StatefulSet ends as the manifest defines
// it. A restore that applies the manifest while storesvr-0 runs alone
// (replicas back to 3, --ordinal-initial=3) fails the same checks.
func TestRunbookOnRecordedPods(t *testing.T) {
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"Restore into the StatefulSet.", "Quorum loss"} {
		lines, err := runbookBlock(doc, title)
		if err != nil {
			t.Fatal(err)
		}
		r, f, err := runFake(t, lines)
		if err != nil {
			t.Fatalf("**%s: %v", title, err)
		}
		if len(f.problems) > 0 {
			t.Errorf("**%s: %s\n%s", title, strings.Join(f.problems, "\n"), strings.Join(f.events, "\n"))
		}
		if jsonString(r.set.Spec) != jsonString(r.applied.Spec) || len(r.secrets) > 0 || len(f.running) != 3 {
			t.Errorf("**%s: ends with %d pods, Secrets %v, template %s", title, len(f.running), r.secrets, jsonString(r.set.Spec.Template.Spec.Containers[0].Args))
		}
		if len(r.seen) < 2 || r.seen[0].members != 1 {
			t.Errorf("**%s: the waits saw %+v, want storesvr-0 alone first", title, r.seen)
		}
	}

	// The restore as it read before: kubectl apply -k while storesvr-0
	// runs alone, then the --ordinal-initial=1 patch.
	old := []string{
		`kubectl -n seqsvr scale statefulset storesvr --replicas=0`,
		`kubectl -n seqsvr delete pvc data-storesvr-0 data-storesvr-1 data-storesvr-2`,
		`kubectl -n seqsvr create secret generic seqsvr-restore --from-file=backup.bak="$backup"`,
		`kubectl -n seqsvr patch statefulset storesvr --type=json -p '[
  {"op":"add","path":"/spec/template/spec/volumes/-","value":{"name":"restore","secret":{"secretName":"seqsvr-restore"}}},
  {"op":"add","path":"/spec/template/spec/containers/0/volumeMounts/-","value":{"name":"restore","mountPath":"/etc/seqsvr/restore","readOnly":true}},
  {"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--restore=/etc/seqsvr/restore/backup.bak"},
  {"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--ordinal-initial=1"}]'`,
		`kubectl -n seqsvr scale statefulset storesvr --replicas=1`,
		`kubectl -n seqsvr wait --for=condition=Ready pod/storesvr-0 --timeout=300s`,
		`kubectl apply -k deploy/kubernetes/storesvr`,
	}
	r, f, err := runFake(t, old)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.problems) == 0 {
		t.Errorf("an apply -k with storesvr-0 alone passed:\n%s", strings.Join(f.events, "\n"))
	}
	t.Logf("the restore as it read before: %s", strings.Join(f.problems, "; "))
	// The apply kept the patch's volume and mount: once the Secret is
	// deleted, a pod that starts waits for it.
	if v := r.set.Spec.Template.Spec.Volumes; !slices.ContainsFunc(v, func(v corev1.Volume) bool { return v.Name == "restore" }) {
		t.Errorf("apply -k dropped the volume a patch added: %s", jsonString(v))
	}
	for _, l := range []string{`kubectl -n seqsvr delete secret seqsvr-restore`, `kubectl -n seqsvr scale statefulset storesvr --replicas=4`} {
		if err = r.exec(l); err != nil {
			break
		}
	}
	if err == nil || !strings.Contains(err.Error(), "wait for it") {
		t.Errorf("a pod started with the Secret deleted: %v", err)
	}

	// A renamed flag in a patch fails at the pod's start.
	_, _, err = runFake(t, []string{
		`kubectl -n seqsvr scale statefulset storesvr --replicas=0`,
		`kubectl -n seqsvr patch statefulset storesvr --type=json -p '[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--ordinal-initail=1"}]'`,
		`kubectl -n seqsvr scale statefulset storesvr --replicas=1`,
	})
	if err == nil || !strings.Contains(err.Error(), "no flag of storesvr") {
		t.Errorf("a pod started with --ordinal-initail: %v", err)
	}
}
