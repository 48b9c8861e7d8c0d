package deploy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// manifests is every object of deploy/kubernetes, decoded strictly into
// its Kubernetes API type: an unknown or misspelt field is an error, as
// `kubectl apply --validate=strict` would make it.
type manifests struct {
	namespaces []*corev1.Namespace
	secrets    []*corev1.Secret
	services   []*corev1.Service
	sets       []*appsv1.StatefulSet
	deploys    []*appsv1.Deployment
	pdbs       []*policyv1.PodDisruptionBudget
	hpas       []*autoscalingv2.HorizontalPodAutoscaler
	monitors   []*monitoringv1.ServiceMonitor
	rules      []*monitoringv1.PrometheusRule
	cronJobs   []*batchv1.CronJob
	pvcs       []*corev1.PersistentVolumeClaim
	files      []string         // paths under kubernetes/
	objects    map[string][]any // the objects of each file
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeDoc decodes one YAML document into the type its apiVersion and
// kind name; it returns nil for a document of comments only.
func decodeDoc(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.Kind == "" && tm.APIVersion == "" {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(string(doc), "")) != "" {
			return nil, fmt.Errorf("a document without apiVersion and kind")
		}
		return nil, nil
	}
	var obj any
	switch tm.APIVersion + "/" + tm.Kind {
	case "v1/Namespace":
		obj = &corev1.Namespace{}
	case "v1/Secret":
		obj = &corev1.Secret{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "apps/v1/StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "monitoring.coreos.com/v1/ServiceMonitor":
		obj = &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	case "batch/v1/CronJob":
		obj = &batchv1.CronJob{}
	case "v1/PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return nil, fmt.Errorf("%s %s: not a kind these tests know", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// readManifests reads every manifest under kubernetes/ (the kustomization
// directories and the files beside them, secrets.example.yaml included).
func readManifests(t *testing.T) *manifests {
	t.Helper()
	var paths []string
	err := filepath.WalkDir("kubernetes", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") && d.Name() != "kustomization.yaml" {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &manifests{objects: map[string][]any{}}
	for _, p := range paths {
		rel, _ := filepath.Rel("kubernetes", p)
		m.files = append(m.files, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range docSep.Split(string(b), -1) {
			obj, err := decodeDoc([]byte(doc))
			if err != nil {
				t.Fatalf("%s, document %d: %v", p, i+1, err)
			}
			if obj != nil {
				m.objects[rel] = append(m.objects[rel], obj)
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *corev1.Secret:
				m.secrets = append(m.secrets, o)
			case *corev1.Service:
				m.services = append(m.services, o)
			case *appsv1.StatefulSet:
				m.sets = append(m.sets, o)
			case *appsv1.Deployment:
				m.deploys = append(m.deploys, o)
			case *policyv1.PodDisruptionBudget:
				m.pdbs = append(m.pdbs, o)
			case *autoscalingv2.HorizontalPodAutoscaler:
				m.hpas = append(m.hpas, o)
			case *monitoringv1.ServiceMonitor:
				m.monitors = append(m.monitors, o)
			case *monitoringv1.PrometheusRule:
				m.rules = append(m.rules, o)
			case *batchv1.CronJob:
				m.cronJobs = append(m.cronJobs, o)
			case *corev1.PersistentVolumeClaim:
				m.pvcs = append(m.pvcs, o)
			}
		}
	}
	if len(m.sets) != 1 || len(m.deploys) != 1 {
		t.Fatalf("want one StatefulSet (storesvr) and one Deployment (allocsvr), got %d and %d", len(m.sets), len(m.deploys))
	}
	return m
}

// The strict decoding is what catches a typo: check that it does.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	b, err := os.ReadFile("kubernetes/storesvr/storesvr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range [][2]string{
		{"  podManagementPolicy: Parallel", "  podManagmentPolicy: Parallel"},
		{"          readinessProbe:", "          readynessProbe:"},
		{"  maxUnavailable: 1", "  maxUnavaliable: 1"},
	} {
		bad := strings.Replace(string(b), typo[0], typo[1], 1)
		if bad == string(b) {
			t.Fatalf("%q is not in storesvr.yaml", typo[0])
		}
		var failed bool
		for _, doc := range docSep.Split(bad, -1) {
			if _, err := decodeDoc([]byte(doc)); err != nil {
				failed = true
			}
		}
		if !failed {
			t.Errorf("%q decoded without error", typo[1])
		}
	}
}

func labelsMatch(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func portNamed(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	if p.Type == intstr.Int {
		for _, cp := range c.Ports {
			if cp.ContainerPort == p.IntVal {
				return cp.ContainerPort, true
			}
		}
		return 0, false
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// listenPort is the port of a HOST:PORT flag value.
func listenPort(t *testing.T, v string) int32 {
	t.Helper()
	i := strings.LastIndexByte(v, ':')
	var p int32
	if _, err := fmt.Sscan(v[i+1:], &p); i < 0 || err != nil {
		t.Fatalf("address %q has no port", v)
	}
	return p
}

// checkContainer: its flags exist, its probes hit the paths the binary
// serves on the port its --http-addr listens on, its secret files are in
// the Secrets.
func checkContainer(t *testing.T, m *manifests, where string, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	if len(c.Command) != 1 {
		t.Fatalf("%s: command %v, want the binary's name", where, c.Command)
	}
	bin := c.Command[0]
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
		if strings.HasPrefix(e.Name, "SEQSVR_") && e.Name != "SEQSVR_LOG_FORMAT" {
			t.Logf("%s: %s set by environment", where, e.Name)
		}
	}
	checkArgs(t, where, bin, c.Args, env)
	httpPort := listenPort(t, flagValue(c.Args, "http-addr"))
	for name, pr := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if pr == nil {
			if name != "startup" {
				t.Errorf("%s: no %s probe", where, name)
			}
			continue
		}
		if pr.HTTPGet == nil {
			t.Errorf("%s: %s probe is not an HTTP GET", where, name)
			continue
		}
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz", "startup": "/healthz"}[name]
		if pr.HTTPGet.Path != want {
			t.Errorf("%s: %s probe on %s, want %s", where, name, pr.HTTPGet.Path, want)
		}
		if p, ok := portNamed(c, pr.HTTPGet.Port); !ok || p != httpPort {
			t.Errorf("%s: %s probe port %s is %d, --http-addr listens on %d", where, name, pr.HTTPGet.Port.String(), p, httpPort)
		}
		tls := flagValue(c.Args, "tls-cert") != ""
		if https := pr.HTTPGet.Scheme == corev1.URISchemeHTTPS; https != tls {
			t.Errorf("%s: %s probe scheme %q with --tls-cert %v", where, name, pr.HTTPGet.Scheme, tls)
		}
	}
	// Every file flag names a file of a mounted Secret's keys.
	for _, a := range c.Args {
		_, val, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(val, "/etc/seqsvr/") {
			continue
		}
		if !secretHolds(m, pod, c, val) {
			t.Errorf("%s: %s: no mounted Secret key provides %s", where, a, val)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: want a read-only root and no privilege escalation", where)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: pod must run as non-root", where)
	}
	if v := flagValue(c.Args, "data-dir"); v == "" || !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == v && !vm.ReadOnly }) {
		t.Errorf("%s: --data-dir %q is not a writable volume", where, v)
	}
}

func secretHolds(m *manifests, pod corev1.PodSpec, c corev1.Container, path string) bool {
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, vm.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			for _, s := range m.secrets {
				if s.Name != v.Secret.SecretName {
					continue
				}
				if len(v.Secret.Items) == 0 {
					_, ok := s.StringData[rel]
					return ok
				}
				for _, it := range v.Secret.Items {
					if _, ok := s.StringData[it.Key]; ok && it.Path == rel {
						return true
					}
				}
			}
		}
	}
	return false
}

func TestStoresvrStatefulSet(t *testing.T) {
	m := readManifests(t)
	ss := m.sets[0]
	pod := ss.Spec.Template.Spec
	c := pod.Containers[0]
	checkContainer(t, m, "StatefulSet "+ss.Name, pod, c)
	if c.Command[0] != "storesvr" {
		t.Fatalf("StatefulSet runs %v", c.Command)
	}
	// Members find each other through the headless Service's DNS names.
	var headless *corev1.Service
	for _, s := range m.services {
		if s.Name == ss.Spec.ServiceName {
			headless = s
		}
	}
	if headless == nil || headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("serviceName %q: want a headless Service publishing not-ready addresses", ss.Spec.ServiceName)
	}
	if want := ss.Spec.ServiceName + "." + ss.Namespace + ".svc.cluster.local"; flagValue(c.Args, "ordinal-domain") != want {
		t.Errorf("--ordinal-domain %q, want %q", flagValue(c.Args, "ordinal-domain"), want)
	}
	if got := flagValue(c.Args, "ordinal-initial"); ss.Spec.Replicas == nil || got != fmt.Sprint(*ss.Spec.Replicas) {
		t.Errorf("--ordinal-initial %s for %v replicas", got, ss.Spec.Replicas)
	}
	for _, f := range []string{"node-id", "peers", "join"} {
		if flagValue(c.Args, f) != "" {
			t.Errorf("--%s is derived from the ordinal: it must not be set", f)
		}
	}
	if ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: the initial members must start together", ss.Spec.PodManagementPolicy)
	}
	if len(ss.Spec.VolumeClaimTemplates) != 1 || !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
		return vm.Name == ss.Spec.VolumeClaimTemplates[0].Name && vm.MountPath == flagValue(c.Args, "data-dir")
	}) {
		t.Errorf("the data dir must be the PVC")
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 ||
		!labelsMatch(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels, ss.Spec.Template.Labels) {
		t.Errorf("want required anti-affinity between members")
	}
	var pdb *policyv1.PodDisruptionBudget
	for _, p := range m.pdbs {
		if labelsMatch(p.Spec.Selector.MatchLabels, ss.Spec.Template.Labels) {
			pdb = p
		}
	}
	if pdb == nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("want a PodDisruptionBudget of maxUnavailable 1 over the members")
	}
	grace := flagDuration(t, c.Args, "shutdown-grace", 5*time.Second)
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second < grace+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v: want at least --shutdown-grace %v + 10s for Raft's shutdown", pod.TerminationGracePeriodSeconds, grace)
	}
}

func flagDuration(t *testing.T, args []string, name string, def time.Duration) time.Duration {
	t.Helper()
	v := flagValue(args, name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("--%s %q: %v", name, v, err)
	}
	return d
}

// The allocsvr stop: preStop, then --shutdown-grace, then the per-key
// handover (a leaving heartbeat bounded by 2s) and the snowflake release;
// the grace period must cover it with room to spare, and exceed the
// store's per-key lease TTL (5s) so a stop is never slower than a crash.
func TestAllocsvrDeployment(t *testing.T) {
	m := readManifests(t)
	d := m.deploys[0]
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	checkContainer(t, m, "Deployment "+d.Name, pod, c)
	if c.Command[0] != "allocsvr" {
		t.Fatalf("Deployment runs %v", c.Command)
	}
	adv := flagValue(c.Args, "advertise-url")
	if !strings.Contains(adv, "$(POD_IP)") || listenPort(t, strings.TrimPrefix(strings.TrimPrefix(adv, "http://"), "https://")) != listenPort(t, flagValue(c.Args, "http-addr")) {
		t.Errorf("--advertise-url %q: want the pod IP and the --http-addr port", adv)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP"
	}) {
		t.Errorf("POD_IP must come from status.podIP")
	}
	// Every --store URL names a storesvr member of the StatefulSet.
	ss := m.sets[0]
	for _, u := range strings.Split(flagValue(c.Args, "store"), ",") {
		if !regexp.MustCompile(`^https?://` + ss.Name + `-\d+\.` + regexp.QuoteMeta(ss.Spec.ServiceName+"."+ss.Namespace) + `\.svc\.cluster\.local:\d+$`).MatchString(u) {
			t.Errorf("--store %s is not a member of StatefulSet %s", u, ss.Name)
		}
	}
	var preStop time.Duration
	if l := c.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Sleep == nil {
		t.Errorf("want a preStop sleep (the image has no shell)")
	} else {
		preStop = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	grace := flagDuration(t, c.Args, "shutdown-grace", 5*time.Second)
	const handover, seqLeaseTTL = 2 * time.Second, 5 * time.Second
	if pod.TerminationGracePeriodSeconds == nil {
		t.Fatal("no terminationGracePeriodSeconds")
	}
	tgp := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if need := preStop + grace + handover; tgp < 2*need || tgp <= seqLeaseTTL {
		t.Errorf("terminationGracePeriodSeconds %v: the stop needs %v (preStop %v + --shutdown-grace %v + handover %v); want twice that and above the seq lease TTL %v",
			tgp, need, preStop, grace, handover, seqLeaseTTL)
	}
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, h := range m.hpas {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name {
			hpa = h
		}
	}
	if hpa == nil || hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Errorf("want an HPA on the Deployment with at least 2 replicas")
	}
}

// Services and ServiceMonitors select pods and ports that exist.
func TestServicesSelectPods(t *testing.T) {
	m := readManifests(t)
	type workload struct {
		labels map[string]string
		c      corev1.Container
	}
	ws := []workload{{m.sets[0].Spec.Template.Labels, m.sets[0].Spec.Template.Spec.Containers[0]}, {m.deploys[0].Spec.Template.Labels, m.deploys[0].Spec.Template.Spec.Containers[0]}}
	for _, s := range m.services {
		var w *workload
		for i := range ws {
			if labelsMatch(s.Spec.Selector, ws[i].labels) {
				w = &ws[i]
			}
		}
		if w == nil {
			t.Errorf("Service %s selects no pods", s.Name)
			continue
		}
		for _, p := range s.Spec.Ports {
			if _, ok := portNamed(w.c, p.TargetPort); !ok {
				t.Errorf("Service %s: target port %s is not a container port", s.Name, p.TargetPort.String())
			}
		}
	}
	for _, sm := range m.monitors {
		n := 0
		for _, s := range m.services {
			if labelsMatch(sm.Spec.Selector.MatchLabels, s.Labels) {
				n++
				for _, e := range sm.Spec.Endpoints {
					if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
						t.Errorf("ServiceMonitor %s: Service %s has no port %q", sm.Name, s.Name, e.Port)
					}
					if e.Path != "/metrics" {
						t.Errorf("ServiceMonitor %s: path %q", sm.Name, e.Path)
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1 (more scrapes every pod twice)", sm.Name, n)
		}
	}
}
