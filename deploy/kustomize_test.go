package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kustomizations are the directories `kubectl apply -k` is run on, in the
// order of an install or an upgrade (docs/upgrading.md: storesvrs first),
// with the app.kubernetes.io/name of the workloads each may hold ("" for
// none).
var kustomizations = []struct{ dir, app string }{
	{"storesvr", "storesvr"},
	{"allocsvr", "allocsvr"},
	{"monitoring", ""},
	{"backup", "seqsvr-backup"},
}

// kustomization is the one form a kustomization.yaml here may take: a
// list of files of its own directory. A secretGenerator, a patch or an
// images transformer fails the strict decoding.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// TestKustomizations: each kustomization lists exactly the manifests of
// its directory and nothing outside it; none applies a Secret (its
// placeholder values would go back over the real ones on every apply);
// there is no kustomization of everything (one apply would roll the
// allocsvrs with the storesvrs); the storesvr one holds only storesvr
// objects and refers to nothing the others define, so it applies alone.
func TestKustomizations(t *testing.T) {
	m := readManifests(t)
	if _, err := os.Stat("kubernetes/kustomization.yaml"); err == nil {
		t.Errorf("kubernetes/kustomization.yaml: one apply -k of everything rolls the allocsvrs with the storesvrs; apply storesvr/ then allocsvr/")
	}
	inSome := map[string]bool{}
	for _, k := range kustomizations {
		var kz kustomization
		readStrict(t, filepath.Join("kubernetes", k.dir, "kustomization.yaml"), &kz)
		var want []string
		for _, f := range m.files {
			if filepath.Dir(f) == k.dir {
				want = append(want, filepath.Base(f))
			}
		}
		got := slices.Clone(kz.Resources)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s/kustomization.yaml lists %v, the directory holds %v", k.dir, got, want)
		}
		for _, r := range kz.Resources {
			path := filepath.Join(k.dir, r)
			inSome[path] = true
			for _, o := range m.objects[path] {
				meta := objectMeta(o)
				if _, ok := o.(*corev1.Secret); ok {
					t.Errorf("%s/kustomization.yaml applies Secret %s (%s): every apply -k would put its values back over the real ones", k.dir, meta.Name, r)
				}
				if app := meta.Labels["app.kubernetes.io/name"]; k.app != "" && app != "" && app != k.app {
					t.Errorf("%s/kustomization.yaml applies %s %s of %s", k.dir, kindOf(o), meta.Name, app)
				}
			}
		}
		if k.app != "" {
			checkSelfContained(t, m, k.dir)
		}
		kubectlBuilds(t, k.dir, len(m.objectsIn(k.dir)))
	}
	for _, f := range m.files {
		for _, o := range m.objects[f] {
			if _, ok := o.(*corev1.Secret); ok && inSome[f] {
				t.Errorf("%s: a Secret in a kustomization", f)
			}
		}
	}
	if len(m.secrets) == 0 {
		t.Error("no example Secrets (secrets.example.yaml): the pods' Secret volumes cannot be checked")
	}
}

func (m *manifests) objectsIn(dir string) []any {
	var out []any
	for _, f := range m.files {
		if filepath.Dir(f) == dir {
			out = append(out, m.objects[f]...)
		}
	}
	return out
}

// checkSelfContained fails for an object of dir that refers to a Service,
// workload or Secret that neither dir nor the operator (the example
// Secrets, the namespace) provides.
func checkSelfContained(t *testing.T, m *manifests, dir string) {
	t.Helper()
	own := m.objectsIn(dir)
	has := func(kind, name string) bool {
		return slices.ContainsFunc(own, func(o any) bool { return kindOf(o) == kind && objectMeta(o).Name == name })
	}
	secret := func(name string) bool {
		return slices.ContainsFunc(m.secrets, func(s *corev1.Secret) bool { return s.Name == name })
	}
	for _, o := range own {
		meta := objectMeta(o)
		if meta.Namespace != "" && !slices.ContainsFunc(m.namespaces, func(n *corev1.Namespace) bool { return n.Name == meta.Namespace }) {
			t.Errorf("%s: %s %s in namespace %s, which namespace.yaml does not make", dir, kindOf(o), meta.Name, meta.Namespace)
		}
		var pod *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			pod = &w.Spec.Template.Spec
			if !has("Service", w.Spec.ServiceName) {
				t.Errorf("%s: StatefulSet %s's Service %s is not in the same kustomization", dir, w.Name, w.Spec.ServiceName)
			}
		case *appsv1.Deployment:
			pod = &w.Spec.Template.Spec
		case *batchv1.CronJob:
			pod = &w.Spec.JobTemplate.Spec.Template.Spec
		case *autoscalingv2.HorizontalPodAutoscaler:
			if !has(w.Spec.ScaleTargetRef.Kind, w.Spec.ScaleTargetRef.Name) {
				t.Errorf("%s: HPA %s scales %s %s, not in the same kustomization", dir, w.Name, w.Spec.ScaleTargetRef.Kind, w.Spec.ScaleTargetRef.Name)
			}
		}
		if pod != nil {
			for _, v := range pod.Volumes {
				if v.Secret != nil && !secret(v.Secret.SecretName) {
					t.Errorf("%s: %s mounts Secret %s, which secrets.example.yaml does not describe", dir, meta.Name, v.Secret.SecretName)
				}
				if c := v.PersistentVolumeClaim; c != nil && !has("PersistentVolumeClaim", c.ClaimName) {
					t.Errorf("%s: %s mounts PVC %s, not in the same kustomization", dir, meta.Name, c.ClaimName)
				}
			}
		}
	}
}

// kubectlBuilds runs `kubectl kustomize` on dir where kubectl is
// installed (it is not a Debian package; the checks above stand without
// it): the directory must build on its own, to the objects its files hold.
func kubectlBuilds(t *testing.T, dir string, objects int) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Logf("kubectl is not installed: %s/ checked without kubectl kustomize", dir)
		return
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join("kubernetes", dir)).CombinedOutput()
	if err != nil {
		t.Errorf("kubectl kustomize %s: %v\n%s", dir, err, out)
		return
	}
	if n := len(regexp.MustCompile(`(?m)^kind: `).FindAll(out, -1)); n != objects {
		t.Errorf("kubectl kustomize %s built %d objects, its files hold %d", dir, n, objects)
	}
}

func objectMeta(o any) metav1.ObjectMeta {
	switch o := o.(type) {
	case *corev1.Namespace:
		return o.ObjectMeta
	case *corev1.Secret:
		return o.ObjectMeta
	case *corev1.Service:
		return o.ObjectMeta
	case *appsv1.StatefulSet:
		return o.ObjectMeta
	case *appsv1.Deployment:
		return o.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return o.ObjectMeta
	case *autoscalingv2.HorizontalPodAutoscaler:
		return o.ObjectMeta
	case *monitoringv1.ServiceMonitor:
		return o.ObjectMeta
	case *monitoringv1.PrometheusRule:
		return o.ObjectMeta
	case *batchv1.CronJob:
		return o.ObjectMeta
	case *corev1.PersistentVolumeClaim:
		return o.ObjectMeta
	}
	panic(fmt.Sprintf("objectMeta: %T", o))
}

// kindOf is the Kubernetes kind of a decoded object: its Go type's name.
func kindOf(o any) string {
	t := fmt.Sprintf("%T", o)
	return t[strings.LastIndexByte(t, '.')+1:]
}

// TestHPAOwnsReplicas: a Deployment an HPA scales sets no replicas, or
// every apply would reset the HPA's count.
func TestHPAOwnsReplicas(t *testing.T) {
	m := readManifests(t)
	for _, d := range m.deploys {
		for _, h := range m.hpas {
			if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name && d.Spec.Replicas != nil {
				t.Errorf("Deployment %s sets replicas %d under HPA %s: every apply resets the HPA's count", d.Name, *d.Spec.Replicas, h.Name)
			}
		}
	}
}

// TestImagesPinned: every container runs the image of a release, the
// one jepsen/upgrade-base names (the latest; `make release` pins the
// manifests to it), never :latest or an untagged name.
func TestImagesPinned(t *testing.T) {
	release := upgradeBaseVersion(t)
	m := readManifests(t)
	var pods []corev1.PodSpec
	for _, s := range m.sets {
		pods = append(pods, s.Spec.Template.Spec)
	}
	for _, d := range m.deploys {
		pods = append(pods, d.Spec.Template.Spec)
	}
	for _, j := range m.cronJobs {
		pods = append(pods, j.Spec.JobTemplate.Spec.Template.Spec)
	}
	if len(pods) < 3 {
		t.Fatalf("%d pod templates", len(pods))
	}
	for _, p := range pods {
		for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
			name, tag, ok := strings.Cut(c.Image[strings.LastIndexByte(c.Image, '/')+1:], ":")
			switch {
			case !ok || tag == "latest":
				t.Errorf("container %s: image %q is not pinned to a release", c.Name, c.Image)
			case name == "seqsvr" && tag != release:
				t.Errorf("container %s: image %q, want the release %s (make release pins it)", c.Name, c.Image, release)
			}
		}
	}
}

// upgradeBaseVersion is the version= line of jepsen/upgrade-base.
func upgradeBaseVersion(t *testing.T) string {
	t.Helper()
	f, err := os.Open("../jepsen/upgrade-base")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "version="); ok {
			return v
		}
	}
	t.Fatal("jepsen/upgrade-base has no version= line")
	return ""
}

// TestGoMemLimit: every container with a memory limit sets GOMEMLIMIT to
// 85-95% of it: at 100% the heap alone may reach the limit and the pod is
// OOM-killed before the garbage collector works harder.
func TestGoMemLimit(t *testing.T) {
	m := readManifests(t)
	var cs []corev1.Container
	for _, s := range m.sets {
		cs = append(cs, s.Spec.Template.Spec.Containers...)
	}
	for _, d := range m.deploys {
		cs = append(cs, d.Spec.Template.Spec.Containers...)
	}
	for _, c := range cs {
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			t.Errorf("container %s: no memory limit", c.Name)
			continue
		}
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
		if i < 0 || c.Env[i].Value == "" {
			t.Errorf("container %s: want GOMEMLIMIT, a literal about 90%% of limits.memory %s", c.Name, limit.String())
			continue
		}
		v, err := goMemLimit(c.Env[i].Value)
		if err != nil {
			t.Errorf("container %s: GOMEMLIMIT %q: %v", c.Name, c.Env[i].Value, err)
			continue
		}
		if r := float64(v) / float64(limit.Value()); r < 0.85 || r > 0.95 {
			t.Errorf("container %s: GOMEMLIMIT %s is %.0f%% of limits.memory %s, want 85-95%%", c.Name, c.Env[i].Value, 100*r, limit.String())
		}
	}
}

// goMemLimit parses GOMEMLIMIT as the Go runtime does: a number of bytes
// with an optional B, KiB, MiB, GiB or TiB suffix.
func goMemLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			q, err := resource.ParseQuantity(n)
			if err != nil || strings.ContainsAny(n, "eEkKmMgGtTpPi") {
				return 0, fmt.Errorf("not a number of %s", u.suffix)
			}
			return q.Value() * u.mult, nil
		}
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return 0, fmt.Errorf("not a number of bytes")
	}
	return n, nil
}

// TestServiceMonitorsSendMetricsToken: every scrape sends a token from a
// Secret key the example Secrets hold, and that token has role metrics in
// the example auth file: without it, with --auth-file, the tag- and
// space-labelled series are hidden and the per-tag alerts never fire.
func TestServiceMonitorsSendMetricsToken(t *testing.T) {
	m := readManifests(t)
	for _, sm := range m.monitors {
		for _, e := range sm.Spec.Endpoints {
			a := e.Authorization
			if a == nil || a.Credentials == nil || a.Type != "Bearer" {
				t.Errorf("ServiceMonitor %s: endpoint %s scrapes without a bearer token", sm.Name, e.Port)
				continue
			}
			tok := exampleSecretValue(m, a.Credentials.Name, a.Credentials.Key)
			if tok == "" {
				t.Errorf("ServiceMonitor %s: token from Secret %s key %s, which the example Secrets do not hold", sm.Name, a.Credentials.Name, a.Credentials.Key)
				continue
			}
			auth := exampleSecretValue(m, "seqsvr-auth", "auth.json")
			if !regexp.MustCompile(`"token":\s*"` + regexp.QuoteMeta(tok) + `",\s*"roles":\s*\["metrics"\]`).MatchString(auth) {
				t.Errorf("ServiceMonitor %s: the example auth.json does not give its token role metrics", sm.Name)
			}
		}
	}
}

func exampleSecretValue(m *manifests, name, key string) string {
	for _, s := range m.secrets {
		if s.Name == name {
			return s.StringData[key]
		}
	}
	return ""
}
