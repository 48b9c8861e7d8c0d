package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8sjson "sigs.k8s.io/json"
)

// podRunner runs the StatefulSet's pods: stsPods in podman, a recorder in
// the unit test.
type podRunner interface {
	// runPod starts pod ord's container with args and podman -v specs.
	runPod(ord int, args, volumes []string)
	// stopPod removes pod ord's container; its volumes stay.
	stopPod(ord int)
	// pvcVolume is the podman volume that is PVC claim of pod ord.
	pvcVolume(ord int, claim string) string
	removeVolume(name string)
	// ready is pod ord's answer to GET path (its readiness probe's).
	ready(ctx context.Context, ord int, path string) (bool, string)
	// status is pod ord's ClusterStatus.
	status(ctx context.Context, ord int) (stsStatus, error)
	// url is pod ord's API on the host.
	url(ord int) string
}

// stsStatus is the part of a ClusterStatus answer the runbook checks.
type stsStatus struct {
	LeaderID  string `json:"leaderId"`
	ClusterID string `json:"clusterId"`
	Members   []struct{ ID string }
}

// runbookSeen is the cluster a wait or a rollout status saw once it
// passed: the test's checks between the runbook's steps.
type runbookSeen struct {
	line      string
	clusterID string
	members   int
}

// runbook runs docs/deploy.md's Kubernetes runbook lines on the storesvr
// StatefulSet's pods as a StatefulSet controller and kubectl would: the
// StatefulSet object (as the manifest defines it, then as patched and
// applied), its pods by ordinal with the template each started from, the
// PVCs, the Secrets the runbook creates, the shell variables it sets.
// There is no API server here: each kubectl line acts on that state at
// once, and on the pods through podRunner.
type runbook struct {
	t        *testing.T
	ctx      context.Context
	pods     podRunner
	m        *manifests
	applied  *appsv1.StatefulSet // the manifest, as the last apply -k left it
	set      *appsv1.StatefulSet // the live object
	api      *corev1.Service     // the API Service a port-forward reaches
	running  map[int]string      // ordinal -> the template it started from (JSON)
	pvcs     map[string]bool     // podman volumes that are PVCs
	secrets  map[string]string   // Secret -> its directory
	vars     map[string]string   // shell variables the runbook set
	dir      string              // the operator's working directory
	forward  int                 // the port-forward's local port (0: none)
	exported bool                // SEQCTL_STORE exported through it
	seen     []runbookSeen
	// secure: the pods mount the Secrets the runbook creates and run with
	// every flag naming their files (statefulset-install); otherwise the
	// manifest's own Secrets are left out (podSpec).
	secure    bool
	nsApplied bool                         // apply -f namespace.yaml ran
	data      map[string]map[string][]byte // each Secret's keys
	seqctlEnv []string                     // SEQCTL_TOKEN_FILE, SEQCTL_CA as exported
	dep       *deployState                 // the Deployment, once applied
	deps      deployRunner                 // its pods (nil: none modelled)
}

// newRunbook is the StatefulSet as the manifest defines it with no pod
// yet (replicas 0 until scaleTo), dir the operator's working directory.
func newRunbook(t *testing.T, ctx context.Context, pods podRunner, dir string) *runbook {
	t.Helper()
	m := readManifests(t)
	r := &runbook{t: t, ctx: ctx, pods: pods, m: m, applied: m.sets[0].DeepCopy(), set: m.sets[0].DeepCopy(),
		running: map[int]string{}, pvcs: map[string]bool{}, secrets: map[string]string{}, vars: map[string]string{}, dir: dir,
		data: map[string]map[string][]byte{}}
	for _, s := range m.services {
		if s.Name == r.set.Name+"-api" {
			r.api = s
		}
	}
	if r.api == nil {
		t.Fatalf("no Service %s-api", r.set.Name)
	}
	return r
}

// scaleTo sets replicas as the install did (its apply -k), for the
// test's setup.
func (r *runbook) scaleTo(n int) {
	r.t.Helper()
	r.set.Spec.Replicas = ptrTo(int32(n))
	if err := r.reconcile(); err != nil {
		r.t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// runBlock runs the block after **title, failing the test at the first
// line it does not know or that fails.
func (r *runbook) runBlock(doc, title string) {
	r.t.Helper()
	lines, err := runbookBlock(doc, title)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, l := range lines {
		r.t.Logf("runbook (%s): %s", title, l)
		start := time.Now()
		if err := r.exec(l); err != nil {
			r.t.Fatalf("docs/deploy.md, **%s, line\n  %s\n: %v", title, l, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			r.t.Logf("  took %v", d.Round(100*time.Millisecond))
		}
	}
}

func (r *runbook) exec(line string) error {
	c, err := parseRunbookLine(line, r.set, r.api, r.vars)
	if err != nil {
		return err
	}
	switch c.kind {
	case cmdScale:
		r.set.Spec.Replicas = ptrTo(int32(c.replicas))
		return r.reconcile()
	case cmdWaitDelete:
		if !labelsMatch(c.selector, r.set.Spec.Template.Labels) {
			return fmt.Errorf("the selector %v matches no pod of the StatefulSet (labels %v): the wait would not wait", c.selector, r.set.Spec.Template.Labels)
		}
		// The controller here stops pods at once (stopPod returns when the
		// container is gone).
		if len(r.running) > 0 {
			return fmt.Errorf("pods %v still run", r.ordinals())
		}
		return nil
	case cmdWaitReady:
		return r.waitReady(c.ords[0], c.timeout, c.line)
	case cmdRollout:
		return r.rolloutStatus(c.timeout, c.line)
	case cmdDeletePVC:
		for i, ord := range c.ords {
			if _, ok := r.running[ord]; ok {
				return fmt.Errorf("PVC %s-%s-%d: pod %d runs, and a bound PVC stays", c.claims[i], r.set.Name, ord, ord)
			}
			v := r.pods.pvcVolume(ord, c.claims[i])
			if !r.pvcs[v] {
				return fmt.Errorf("PVC %s-%s-%d does not exist (kubectl: NotFound)", c.claims[i], r.set.Name, ord)
			}
			r.pods.removeVolume(v)
			delete(r.pvcs, v)
		}
		return nil
	case cmdCreateSecret:
		if _, ok := r.secrets[c.name]; ok {
			return fmt.Errorf("Secret %s already exists", c.name)
		}
		if r.secure && !r.nsApplied {
			return fmt.Errorf("namespace %s not found: the Secret goes into it", r.set.Namespace)
		}
		data := map[string][]byte{}
		dir := filepath.Join(r.dir, ".secrets", c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range c.files {
			p := f[1]
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return fmt.Errorf("--from-file: %w", err)
			}
			// A Secret volume's files are 0644 unless defaultMode says
			// otherwise; the pod's user reads them.
			if _, ok := data[f[0]]; ok {
				return fmt.Errorf("--from-file: key %s twice", f[0])
			}
			data[f[0]] = b
			if err := os.WriteFile(filepath.Join(dir, f[0]), b, 0o644); err != nil {
				return err
			}
		}
		r.data[c.name] = data
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		r.secrets[c.name] = dir
		return nil
	case cmdDeleteSecret:
		if _, ok := r.secrets[c.name]; !ok {
			return fmt.Errorf("Secret %s does not exist (kubectl: NotFound)", c.name)
		}
		// A running pod keeps the files it mounted; a pod started later
		// would wait for the Secret (podSpec refuses it).
		delete(r.secrets, c.name)
		delete(r.data, c.name)
		return nil
	case cmdPatch:
		if err := r.patch(c.patch); err != nil {
			return err
		}
		return r.reconcile()
	case cmdApplyFile:
		return r.applyNamespace(c.kustom)
	case cmdApply:
		switch c.kustom {
		case "allocsvr":
			return r.applyDeployment(c.kustom)
		case "monitoring":
			return r.applyMonitoring(c.kustom)
		}
		if err := r.apply(c.kustom); err != nil {
			return err
		}
		return r.reconcile()
	case cmdRolloutDep:
		return r.rolloutDeployment(c.name, c.timeout)
	case cmdPortForward:
		if r.forward != 0 {
			return fmt.Errorf("a second port-forward")
		}
		r.forward = c.ports[0]
		return nil
	case cmdExport:
		p, err := storeURLPort(c.store)
		if err != nil {
			return err
		}
		if r.forward == 0 || p != r.forward {
			return fmt.Errorf("SEQCTL_STORE=%s: no port-forward listens on port %d", c.store, p)
		}
		r.exported = true
		r.seqctlEnv = nil
		if c.token != "" {
			r.seqctlEnv = append(r.seqctlEnv, "SEQCTL_TOKEN_FILE="+c.token)
		}
		if c.ca != "" {
			r.seqctlEnv = append(r.seqctlEnv, "SEQCTL_CA="+c.ca)
		}
		return nil
	case cmdAssign:
		out, err := r.bash(fmt.Sprintf("%s\nprintf %%s \"$%s\"", c.line, c.name), nil)
		if err != nil {
			return err
		}
		r.vars[c.name] = out
		return nil
	case cmdSeqctl:
		if !r.exported {
			return fmt.Errorf("seqctl before SEQCTL_STORE was exported: it would reach no store")
		}
		if _, ok := r.running[0]; !ok {
			return fmt.Errorf("the port-forward reaches pod 0 in these runs, and it does not run")
		}
		// The port-forward is pod 0's published port here, and plain HTTP:
		// the podman pods run without the Secrets (no TLS, no tokens), so
		// the exported SEQCTL_TOKEN_FILE and SEQCTL_CA are not passed.
		// With the Secrets (secure), the pods serve HTTPS with the
		// certificate the operator made, and the exported token file and
		// CA (paths in the operator's directory, bash's) are passed as
		// written: the URL names localhost, as through a port-forward.
		env := []string{"SEQCTL_STORE=" + r.pods.url(0)}
		if r.secure {
			env = append(env, r.seqctlEnv...)
		}
		out, err := r.bash(c.line, env)
		if strings.TrimSpace(out) != "" {
			r.t.Logf("  %s", strings.ReplaceAll(strings.TrimSpace(out), "\n", "\n  "))
		}
		return err
	}
	return fmt.Errorf("internal: command kind %q not run", c.kind)
}

// bash runs script in the runbook's directory with the variables it set,
// seqctl of binDir on PATH, and env; it answers stdout.
func (r *runbook) bash(script string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(r.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = r.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQCTL_") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range r.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s%s", err, out, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		out = append(out, "\n"+s...)
	}
	return string(out), nil
}

func (r *runbook) ordinals() []int {
	var o []int
	for ord := range r.running {
		o = append(o, ord)
	}
	sort.Ints(o)
	return o
}

// templateKey is the pod template as JSON: a pod that started from
// another one is out of date (a StatefulSet's revisions compare the
// whole template).
func (r *runbook) templateKey() string {
	b, err := json.Marshal(r.set.Spec.Template)
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

// reconcile does what the StatefulSet controller does after a change
// (podManagementPolicy: Parallel, updateStrategy: RollingUpdate): pods
// at or above replicas stop, all at once; missing ordinals below it
// start from the current template, each on its PVC; then every pod of
// an older template is replaced, the highest ordinal first, each one
// ready before the next goes.
func (r *runbook) reconcile() error {
	if r.set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || r.set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		r.set.Spec.UpdateStrategy.RollingUpdate != nil {
		return fmt.Errorf("only podManagementPolicy Parallel and a plain RollingUpdate are modelled here")
	}
	want := int(*r.set.Spec.Replicas)
	for _, ord := range r.ordinals() {
		if ord >= want {
			r.pods.stopPod(ord)
			delete(r.running, ord)
		}
	}
	for ord := range want {
		if _, ok := r.running[ord]; !ok {
			if err := r.startPod(ord); err != nil {
				return err
			}
		}
	}
	key := r.templateKey()
	var old []int
	for _, ord := range r.ordinals() {
		if r.running[ord] != key {
			old = append(old, ord)
		}
	}
	slices.Reverse(old)
	for i, ord := range old {
		r.t.Logf("  rolling update: %s-%d restarts from the new template", r.set.Name, ord)
		r.pods.stopPod(ord)
		delete(r.running, ord)
		if err := r.startPod(ord); err != nil {
			return err
		}
		if i < len(old)-1 {
			if err := r.waitReady(ord, 0, ""); err != nil {
				return fmt.Errorf("rolling update: %w", err)
			}
		}
	}
	return nil
}

// startPod starts pod ord from the current template.
func (r *runbook) startPod(ord int) error {
	args, vols, err := r.podSpec(ord)
	if err != nil {
		return err
	}
	// A misspelt or renamed flag fails here rather than as a pod that
	// never gets ready: storesvr's --help, built from this checkout.
	for _, a := range args {
		if m := flagArg.FindStringSubmatch(a); m == nil || !help["storesvr"].flags[m[1]] {
			return fmt.Errorf("pod %s-%d: %q is no flag of storesvr --help", r.set.Name, ord, a)
		}
	}
	r.pods.runPod(ord, args, vols)
	r.running[ord] = r.templateKey()
	for _, c := range r.set.Spec.VolumeClaimTemplates {
		r.pvcs[r.pods.pvcVolume(ord, c.Name)] = true
	}
	return nil
}

// podSpec is pod ord's container args and podman volumes from the
// current template: each PVC its podman volume, a Secret the runbook
// created its directory, read-only. With secure (the install), every
// Secret volume is laid out as the kubelet does (secretVolume) from the
// Secrets the runbook created, and every arg is kept. Otherwise the
// Secrets the manifest's own template mounts (auth, TLS: made from the
// operator's files at install) are not here: those pods run without
// them, plain HTTP and no auth, so those volumes and the flags naming
// files in them are left out. Any other Secret that does not exist
// would keep the pod waiting: an error.
func (r *runbook) podSpec(ord int) (args, vols []string, err error) {
	spec := r.set.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		return nil, nil, fmt.Errorf("the pod has %d containers and %d init containers: one container is modelled", len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	if !slices.Equal(c.Command, []string{"storesvr"}) {
		return nil, nil, fmt.Errorf("the container runs %v, not storesvr", c.Command)
	}
	operator := map[string]bool{}
	for _, v := range r.applied.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			operator[v.Secret.SecretName] = true
		}
	}
	var dropped []string
	for _, vm := range c.VolumeMounts {
		if slices.ContainsFunc(r.set.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool { return p.Name == vm.Name }) {
			vols = append(vols, r.pods.pvcVolume(ord, vm.Name)+":"+vm.MountPath)
			continue
		}
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
		if i < 0 {
			return nil, nil, fmt.Errorf("volumeMount %s names no volume", vm.Name)
		}
		s := spec.Volumes[i].Secret
		if r.secure && s != nil && vm.SubPath == "" {
			dir, err := r.secretVolume(fmt.Sprintf("%s-%d", r.set.Name, ord), spec.Volumes[i], spec.SecurityContext)
			if err != nil {
				return nil, nil, fmt.Errorf("pod %s-%d: %w", r.set.Name, ord, err)
			}
			if !vm.ReadOnly {
				return nil, nil, fmt.Errorf("pod %s-%d mounts Secret volume %s read-write", r.set.Name, ord, vm.Name)
			}
			vols = append(vols, dir+":"+vm.MountPath+":ro")
			continue
		}
		switch {
		case s == nil || len(s.Items) > 0 || vm.SubPath != "":
			return nil, nil, fmt.Errorf("volume %s: only whole Secret volumes and the PVCs are modelled", vm.Name)
		case r.secrets[s.SecretName] != "":
			vols = append(vols, r.secrets[s.SecretName]+":"+vm.MountPath+":ro")
		case operator[s.SecretName]:
			dropped = append(dropped, vm.MountPath+"/")
		default:
			return nil, nil, fmt.Errorf("pod %s-%d mounts Secret %s, which does not exist: it would wait for it", r.set.Name, ord, s.SecretName)
		}
	}
	for _, a := range c.Args {
		_, v, _ := strings.Cut(a, "=")
		if !slices.ContainsFunc(dropped, func(p string) bool { return strings.HasPrefix(v, p) }) {
			args = append(args, a)
		}
	}
	return args, vols, nil
}

// patch applies a JSON patch to the live StatefulSet as the API server
// does: to the object as JSON, the result decoded strictly (case-
// sensitive, no unknown or duplicate field) back into the type, and
// refused where the API refuses an update of a StatefulSet's spec.
func (r *runbook) patch(p []byte) error {
	doc, err := json.Marshal(r.set)
	if err != nil {
		return err
	}
	out, err := applyJSONPatch(doc, p)
	if err != nil {
		return err
	}
	next := &appsv1.StatefulSet{}
	strict, err := k8sjson.UnmarshalStrict(out, next)
	if err == nil && len(strict) > 0 {
		err = fmt.Errorf("%v", strict)
	}
	if err != nil {
		return fmt.Errorf("the patched StatefulSet does not decode strictly: %w", err)
	}
	if err := statefulSetUpdate(r.set, next); err != nil {
		return err
	}
	r.set = next
	return nil
}

// statefulSetUpdate refuses what the API server refuses of an update:
// spec fields other than replicas, template, updateStrategy,
// minReadySeconds, ordinals and the PVC retention policy, and a pod spec
// whose mounts name no volume or whose volumes repeat a name.
func statefulSetUpdate(old, next *appsv1.StatefulSet) error {
	frozen := func(s *appsv1.StatefulSet) appsv1.StatefulSetSpec {
		sp := *s.Spec.DeepCopy()
		sp.Replicas, sp.Template, sp.UpdateStrategy, sp.MinReadySeconds, sp.Ordinals, sp.PersistentVolumeClaimRetentionPolicy = nil, corev1.PodTemplateSpec{}, appsv1.StatefulSetUpdateStrategy{}, 0, nil, nil
		return sp
	}
	if jsonString(frozen(old)) != jsonString(frozen(next)) { // JSON: a Quantity compares by value
		return fmt.Errorf("an update of StatefulSet spec fields other than replicas, template, updateStrategy, persistentVolumeClaimRetentionPolicy and minReadySeconds is forbidden")
	}
	if old.Name != next.Name || old.Namespace != next.Namespace {
		return fmt.Errorf("the patch renames the StatefulSet")
	}
	spec := next.Spec.Template.Spec
	names := map[string]bool{}
	for _, c := range next.Spec.VolumeClaimTemplates {
		names[c.Name] = true
	}
	for _, v := range spec.Volumes {
		if names[v.Name] {
			return fmt.Errorf("volume %s: the name is taken", v.Name)
		}
		names[v.Name] = true
	}
	for _, c := range spec.Containers {
		paths := map[string]bool{}
		for _, vm := range c.VolumeMounts {
			if !names[vm.Name] {
				return fmt.Errorf("container %s mounts volume %s, which the pod spec does not define", c.Name, vm.Name)
			}
			if paths[vm.MountPath] {
				return fmt.Errorf("container %s mounts two volumes at %s", c.Name, vm.MountPath)
			}
			paths[vm.MountPath] = true
		}
	}
	return nil
}

// apply is `kubectl apply -k kubernetes/DIR` of the storesvr
// kustomization on the live StatefulSet: each resource it lists must be
// a manifest read here, and the StatefulSet among them. kubectl's
// client-side apply merges three ways (the last applied manifest, the
// live object, the manifest): every field the manifest sets takes its
// value — replicas, and args as a whole (a list without a merge key) —
// while list items merged by key that a patch added and no manifest had
// (volumes by name, volumeMounts by mountPath) stay. Any other
// difference a patch left is not modelled: an error rather than a guess.
func (r *runbook) apply(dir string) error {
	var kz kustomization
	readStrict(r.t, filepath.Join("kubernetes", dir, "kustomization.yaml"), &kz)
	var man *appsv1.StatefulSet
	for _, res := range kz.Resources {
		objs, ok := r.m.objects[filepath.Join(dir, res)]
		if !ok {
			return fmt.Errorf("kubernetes/%s/kustomization.yaml lists %s, which is no manifest", dir, res)
		}
		for _, o := range objs {
			if s, ok := o.(*appsv1.StatefulSet); ok && s.Name == r.set.Name {
				man = s.DeepCopy()
			}
		}
	}
	if man == nil {
		return fmt.Errorf("kubernetes/%s applies no StatefulSet %s", dir, r.set.Name)
	}
	live := r.set.DeepCopy()
	next := man.DeepCopy()
	lc, nc := &live.Spec.Template.Spec.Containers, &next.Spec.Template.Spec.Containers
	if len(*lc) != 1 || len(*nc) != 1 || (*lc)[0].Name != (*nc)[0].Name {
		return fmt.Errorf("apply after a change of the containers: not modelled")
	}
	// The items a patch added stay, in the live object and in the result.
	for _, v := range live.Spec.Template.Spec.Volumes {
		if !slices.ContainsFunc(r.applied.Spec.Template.Spec.Volumes, func(a corev1.Volume) bool { return a.Name == v.Name }) {
			next.Spec.Template.Spec.Volumes = append(next.Spec.Template.Spec.Volumes, v)
		}
	}
	for _, vm := range (*lc)[0].VolumeMounts {
		if !slices.ContainsFunc(r.applied.Spec.Template.Spec.Containers[0].VolumeMounts, func(a corev1.VolumeMount) bool { return a.MountPath == vm.MountPath }) {
			(*nc)[0].VolumeMounts = append((*nc)[0].VolumeMounts, vm)
		}
	}
	// What the model takes from the manifest, taken; the rest must agree.
	cmp := live.DeepCopy()
	cmp.Spec.Replicas = next.Spec.Replicas
	cmp.Spec.Template.Spec.Containers[0].Args = (*nc)[0].Args
	want := next.DeepCopy()
	for _, s := range []*appsv1.StatefulSet{cmp, want} { // the order of merged items aside
		ps := &s.Spec.Template.Spec
		slices.SortFunc(ps.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(ps.Containers[0].VolumeMounts, func(a, b corev1.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	}
	if a, b := jsonString(cmp.Spec), jsonString(want.Spec); a != b {
		return fmt.Errorf("apply -k after a change this model of kubectl apply does not cover:\nlive   %s\napplied %s", a, b)
	}
	r.applied, r.set = man, next
	return nil
}

// waitReady waits until pod ord answers its readiness probe (timeout 0:
// the test's own bound) and records the cluster it then sees (line ""
// records nothing).
func (r *runbook) waitReady(ord int, timeout time.Duration, line string) error {
	if _, ok := r.running[ord]; !ok {
		return fmt.Errorf("pod %s-%d does not exist (kubectl: NotFound)", r.set.Name, ord)
	}
	ctx, cancel := r.bound(timeout)
	defer cancel()
	probe := r.set.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		return fmt.Errorf("the container has no HTTP readiness probe")
	}
	if err := waitProbe(ctx, fmt.Sprintf("pod %s-%d", r.set.Name, ord), func(ctx context.Context) (bool, string) {
		return r.pods.ready(ctx, ord, probe.HTTPGet.Path)
	}); err != nil {
		return err
	}
	if line != "" {
		st, err := r.pods.status(ctx, ord)
		if err != nil {
			return fmt.Errorf("pod %s-%d is ready but ClusterStatus fails: %w", r.set.Name, ord, err)
		}
		r.seen = append(r.seen, runbookSeen{line: line, clusterID: st.ClusterID, members: len(st.Members)})
	}
	return nil
}

// rolloutStatus waits until every replica runs the current template and
// is ready, and each answers ClusterStatus with one cluster: a leader,
// the same cluster ID, as many members as replicas.
func (r *runbook) rolloutStatus(timeout time.Duration, line string) error {
	ctx, cancel := r.bound(timeout)
	defer cancel()
	want := int(*r.set.Spec.Replicas)
	key := r.templateKey()
	for ord := range want {
		if r.running[ord] != key {
			return fmt.Errorf("pod %s-%d does not run the current template", r.set.Name, ord)
		}
	}
	probe := r.set.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path
	var saw string
	for {
		ids := map[string]bool{}
		ok := true
		var last stsStatus
		for ord := 0; ok && ord < want; ord++ {
			var ready bool
			if ready, saw = r.pods.ready(ctx, ord, probe); !ready {
				saw, ok = fmt.Sprintf("pod %d not ready: %s", ord, saw), false
				break
			}
			st, err := r.pods.status(ctx, ord)
			if err != nil || st.LeaderID == "" || len(st.Members) != want {
				saw, ok = fmt.Sprintf("pod %d: ClusterStatus %+v %v", ord, st, err), false
				break
			}
			ids[st.ClusterID], last = true, st
		}
		if ok && len(ids) == 1 {
			r.seen = append(r.seen, runbookSeen{line: line, clusterID: last.ClusterID, members: len(last.Members)})
			return nil
		}
		if ok {
			saw = fmt.Sprintf("the pods name cluster IDs %v", ids)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rollout of %d replicas not done: %s", want, saw)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *runbook) bound(timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout == 0 {
		return context.WithCancel(r.ctx)
	}
	return context.WithTimeout(r.ctx, timeout)
}
