package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// The install block of docs/deploy.md's Kubernetes runbook, run with the
// real Secrets: the operator's files made as secrets.example.yaml and
// docs/security.md say, the Secrets created from them, the storesvr
// StatefulSet's pods with --auth-file, HTTPS and Raft mutual TLS as the
// manifest writes them, the allocsvr Deployment's pods, the monitoring
// objects decoded.

// The operator's tokens, one per role of auth.json.
const (
	inAdminTok   = "install-admin-token-0123456789"
	inAllocTok   = "install-alloc-token-0123456789"
	inClientTok  = "install-client-token-012345678"
	inMetricsTok = "install-metrics-token-01234567"
)

// operatorFiles writes into dir the files the install block's `create
// secret` lines read: auth.json and the tokens, and a CA with the
// storesvrs' certificate. The certificate's SANs are the names
// secrets.example.yaml tells an operator to put, derived from the
// manifests: every member's host under the headless Service
// (*.--ordinal-domain), the API Service's names (NAME, NAME.NS.svc), and
// localhost, which docs/deploy.md asks for a port-forward. It answers the
// CA for the test's own client.
func operatorFiles(t *testing.T, dir string, m *manifests, api *corev1.Service) *x509.CertPool {
	t.Helper()
	ss := m.sets[0]
	domain := flagValue(ss.Spec.Template.Spec.Containers[0].Args, "ordinal-domain")
	sans := []string{"*." + domain, api.Name, api.Name + "." + api.Namespace + ".svc", "localhost"}
	example, err := os.ReadFile("kubernetes/secrets.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sans { // what the example's comment names
		if !strings.Contains(string(example), n) {
			t.Fatalf("secrets.example.yaml does not tell the operator to put %s in the certificate", n)
		}
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "seqsvr install CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	// A peer certificate (docs/security.md, section 1): both usages, the
	// members' names; only the members mount its key.
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ss.Name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), DNSNames: sans,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	auth := fmt.Sprintf(`[{"name":"ops","token":%q,"roles":["admin"]},{"name":"allocsvr","token":%q,"roles":["alloc"]},`+
		`{"name":"apps","token":%q,"roles":["client"]},{"name":"prometheus","token":%q,"roles":["metrics"]}]`,
		inAdminTok, inAllocTok, inClientTok, inMetricsTok)
	for name, body := range map[string][]byte{
		"auth.json": []byte(auth), "alloc-token": []byte(inAllocTok + "\n"), "admin-token": []byte(inAdminTok + "\n"),
		"metrics-token": []byte(inMetricsTok + "\n"),
		"ca.crt":        pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"tls.crt":       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key":       pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// applyNamespace is `kubectl apply -f deploy/kubernetes/FILE`: the file
// decoded strictly, one Namespace, the StatefulSet's.
func (r *runbook) applyNamespace(file string) error {
	b, err := os.ReadFile(filepath.Join("kubernetes", file))
	if err != nil {
		return err
	}
	var objs []any
	for _, doc := range docSep.Split(string(b), -1) {
		o, err := decodeDoc([]byte(doc))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	if len(objs) != 1 {
		return fmt.Errorf("%s: %d objects, want one Namespace", file, len(objs))
	}
	if ns, ok := objs[0].(*corev1.Namespace); !ok || ns.Name != r.set.Namespace {
		return fmt.Errorf("%s: want one Namespace %s, have %d objects", file, r.set.Namespace, len(objs))
	}
	r.nsApplied = true
	return nil
}

// kustomized is the objects of kubernetes/DIR's kustomization, each
// decoded strictly (readManifests), in the namespace created.
func (r *runbook) kustomized(dir string) ([]any, error) {
	var kz kustomization
	readStrict(r.t, filepath.Join("kubernetes", dir, "kustomization.yaml"), &kz)
	var out []any
	for _, res := range kz.Resources {
		objs, ok := r.m.objects[filepath.Join(dir, res)]
		if !ok {
			return nil, fmt.Errorf("kubernetes/%s/kustomization.yaml lists %s, which is no manifest", dir, res)
		}
		for _, o := range objs {
			if ns := objectMeta(o).Namespace; ns != r.set.Namespace {
				return nil, fmt.Errorf("kubernetes/%s: %s %s in namespace %q", dir, kindOf(o), objectMeta(o).Name, ns)
			}
		}
		out = append(out, objs...)
	}
	if r.secure && !r.nsApplied {
		return nil, fmt.Errorf("namespace %s not found", r.set.Namespace)
	}
	return out, nil
}

// applyMonitoring is `kubectl apply -k deploy/kubernetes/monitoring`.
// There is no Prometheus Operator here: its objects are decoded strictly
// into the operator's types (readManifests did) and checked to name only
// Secrets and keys the runbook created; nothing runs them.
func (r *runbook) applyMonitoring(dir string) error {
	objs, err := r.kustomized(dir)
	if err != nil {
		return err
	}
	secretKey := func(name, key string) error {
		if d, ok := r.data[name]; !ok {
			return fmt.Errorf("Secret %s does not exist", name)
		} else if _, ok := d[key]; !ok {
			return fmt.Errorf("Secret %s has no key %s", name, key)
		}
		return nil
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *monitoringv1.PrometheusRule:
		case *monitoringv1.ServiceMonitor:
			for _, ep := range o.Spec.Endpoints {
				if a := ep.Authorization; a != nil && a.Credentials != nil {
					if err := secretKey(a.Credentials.Name, a.Credentials.Key); err != nil {
						return fmt.Errorf("ServiceMonitor %s: %w", o.Name, err)
					}
				}
				if tc := ep.TLSConfig; tc != nil && tc.CA.Secret != nil {
					if err := secretKey(tc.CA.Secret.Name, tc.CA.Secret.Key); err != nil {
						return fmt.Errorf("ServiceMonitor %s: %w", o.Name, err)
					}
				}
			}
		default:
			return fmt.Errorf("kubernetes/%s: a %s, not a Prometheus Operator object", dir, kindOf(o))
		}
	}
	return nil
}

// secretVolume lays out Secret volume v of pod as the kubelet does, in a
// directory of the runbook's, and answers it: every key of the Secret,
// or the items' keys at their paths; each file of mode items[].mode,
// else defaultMode, else 0644; then, with an fsGroup, the files' group is
// the fsGroup and their mode gains 0440 (the kubelet's
// SetVolumeOwnership on a read-only volume). Owner root. The container's
// user must be able to read every file: else the manifest is wrong.
func (r *runbook) secretVolume(pod string, v corev1.Volume, sc *corev1.PodSecurityContext) (string, error) {
	s := v.Secret
	data, ok := r.data[s.SecretName]
	if !ok {
		return "", fmt.Errorf("Secret %s does not exist: the pod would wait for it", s.SecretName)
	}
	dir := filepath.Join(r.dir, ".volumes", pod+"-"+v.Name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mode := int32(0o644)
	if s.DefaultMode != nil {
		mode = *s.DefaultMode
	}
	type file struct {
		path string
		mode int32
	}
	files := map[string]file{} // key -> file
	if len(s.Items) == 0 {
		for k := range data {
			files[k] = file{k, mode}
		}
	}
	for _, it := range s.Items {
		if _, ok := data[it.Key]; !ok {
			return "", fmt.Errorf("volume %s: Secret %s has no key %s", v.Name, s.SecretName, it.Key)
		}
		if filepath.IsAbs(it.Path) || slices.Contains(strings.Split(it.Path, "/"), "..") {
			return "", fmt.Errorf("volume %s: item path %s", v.Name, it.Path)
		}
		f := file{it.Path, mode}
		if it.Mode != nil {
			f.mode = *it.Mode
		}
		files[it.Key] = f
	}
	uid, gid := int64(0), int64(-1)
	groups := map[int64]bool{}
	if sc != nil {
		if sc.RunAsUser != nil {
			uid = *sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			groups[*sc.RunAsGroup] = true
		}
		if sc.FSGroup != nil {
			gid = *sc.FSGroup
			groups[gid] = true
		}
		for _, g := range sc.SupplementalGroups {
			groups[g] = true
		}
	}
	for k, f := range files {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		m := os.FileMode(f.mode) & 0o777
		if gid >= 0 {
			m |= 0o440
		}
		if err := os.WriteFile(p, data[k], m); err != nil {
			return "", err
		}
		if err := os.Chmod(p, m); err != nil { // past the umask
			return "", err
		}
		if gid >= 0 {
			// The pods' user reads through this group: a root-owned
			// file of another group is the test's to set, as root.
			if os.Getuid() != 0 {
				return "", fmt.Errorf("volume %s: setting group %d (the fsGroup) needs root", v.Name, gid)
			}
			if err := os.Chown(p, 0, int(gid)); err != nil {
				return "", err
			}
		}
		readable := uid == 0 || m&0o004 != 0 || (gid >= 0 && groups[gid] && m&0o040 != 0)
		if !readable {
			return "", fmt.Errorf("volume %s: %s is mode %04o, owner root, group %d: unreadable to the pod's user %d", v.Name, f.path, m, gid, uid)
		}
	}
	return dir, nil
}

// podmanUser is the podman run flags of a pod's securityContext: its
// user and group, the fsGroup and supplemental groups as added groups.
func podmanUser(sc *corev1.PodSecurityContext) []string {
	if sc == nil || sc.RunAsUser == nil {
		return nil
	}
	u := fmt.Sprint(*sc.RunAsUser)
	if sc.RunAsGroup != nil {
		u += fmt.Sprintf(":%d", *sc.RunAsGroup)
	}
	out := []string{"--user", u}
	if sc.FSGroup != nil {
		out = append(out, "--group-add", fmt.Sprint(*sc.FSGroup))
	}
	for _, g := range sc.SupplementalGroups {
		out = append(out, "--group-add", fmt.Sprint(g))
	}
	return out
}

// deployState is the Deployment as applied and its pods.
type deployState struct {
	d    *appsv1.Deployment
	pods []string // pod names, started from d's template
}

// deployRunner runs a Deployment's pods: allocPods in podman.
type deployRunner interface {
	// run starts pod i named name: command and args (the $(VAR)s
	// expanded), env, podman -v specs, and the pod IP it must have.
	run(i int, name string, cmd, args, env, vols []string, ip string)
	// podIP is the address pod i will have on the pods' network.
	podIP(i int) string
	// ready is pod i's answer to GET path on port.
	ready(ctx context.Context, i int, path string) (bool, string)
	url(i int) string
}

// applyDeployment is `kubectl apply -k deploy/kubernetes/DIR` of the
// allocsvr kustomization: its Deployment, scaled by its HPA. A
// Deployment without replicas starts with 1 and its HPA raises it to
// minReplicas at once; modelled as minReplicas pods started together. A
// second apply of another template (an upgrade) is not modelled.
func (r *runbook) applyDeployment(dir string) error {
	objs, err := r.kustomized(dir)
	if err != nil {
		return err
	}
	var d *appsv1.Deployment
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			if d != nil {
				return fmt.Errorf("kubernetes/%s: two Deployments", dir)
			}
			d = o.DeepCopy()
		case *autoscalingv2.HorizontalPodAutoscaler:
			hpa = o
		}
	}
	if d == nil {
		return fmt.Errorf("kubernetes/%s applies no Deployment", dir)
	}
	n := 1
	if d.Spec.Replicas != nil {
		n = int(*d.Spec.Replicas)
	}
	if hpa != nil && hpa.Spec.ScaleTargetRef.Kind == "Deployment" && hpa.Spec.ScaleTargetRef.Name == d.Name {
		if hpa.Spec.MinReplicas != nil {
			n = max(n, int(*hpa.Spec.MinReplicas))
		}
	}
	if r.dep != nil {
		if jsonString(r.dep.d.Spec.Template) != jsonString(d.Spec.Template) {
			return fmt.Errorf("a new template of Deployment %s: a rollout is not modelled here", d.Name)
		}
		return nil
	}
	if r.deps == nil {
		return fmt.Errorf("no runner of Deployment pods here")
	}
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		return fmt.Errorf("Deployment %s: %d containers, %d init containers: one container is modelled", d.Name, len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	bin := firstOf(c.Command)
	if _, ok := help[bin]; !ok || len(c.Command) != 1 {
		return fmt.Errorf("Deployment %s runs %v: not a binary of this test", d.Name, c.Command)
	}
	st := &deployState{d: d}
	for i := range n {
		// A Deployment's pods are named DEPLOYMENT-HASH-SUFFIX.
		name := fmt.Sprintf("%s-%s-%c%c%c%c%c", d.Name, "6d4cf56db6", 'a'+i, 'b', 'c', 'd', 'e')
		ip := r.deps.podIP(i)
		env, args, err := containerEnv(c, name, ip)
		if err != nil {
			return fmt.Errorf("Deployment %s: %w", d.Name, err)
		}
		for _, a := range args {
			if m := flagArg.FindStringSubmatch(a); m == nil || !help[bin].flags[m[1]] {
				return fmt.Errorf("pod %s: %q is no flag of %s --help", name, a, bin)
			}
		}
		var vols []string
		for _, vm := range c.VolumeMounts {
			j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == vm.Name })
			if j < 0 {
				return fmt.Errorf("volumeMount %s names no volume", vm.Name)
			}
			v := spec.Volumes[j]
			switch {
			case vm.SubPath != "":
				return fmt.Errorf("volumeMount %s: subPath is not modelled", vm.Name)
			case v.Secret != nil:
				if !vm.ReadOnly {
					return fmt.Errorf("pod %s mounts Secret volume %s read-write", name, vm.Name)
				}
				dir, err := r.secretVolume(name, v, spec.SecurityContext)
				if err != nil {
					return fmt.Errorf("pod %s: %w", name, err)
				}
				vols = append(vols, dir+":"+vm.MountPath+":ro")
			case v.EmptyDir != nil:
				// A podman volume of the pod's (the image's directory,
				// owned by its user), removed with the test's volumes.
				vols = append(vols, fmt.Sprintf("%s-%s-%s", "emptydir", name, v.Name)+":"+vm.MountPath)
			default:
				return fmt.Errorf("volume %s: only Secret and emptyDir volumes are modelled", v.Name)
			}
		}
		r.deps.run(i, name, c.Command, args, env, vols, ip)
		st.pods = append(st.pods, name)
	}
	r.dep = st
	return nil
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// containerEnv is container c's environment as NAME=VALUE and its args
// with each $(NAME) of that environment expanded, as the kubelet does
// (an undefined $(NAME) stays as written), for pod name at address ip:
// value, the downward API's status.podIP (ip: the address the test gives
// the container on the pods' network with podman run --ip, so the pod's
// own address is known before it starts, as the kubelet knows the pod
// IP before the container starts) and metadata.name, and limits.cpu
// (rounded up to whole CPUs, divisor 1). Any other source is an error.
func containerEnv(c corev1.Container, name, ip string) (env, args []string, err error) {
	vals := map[string]string{}
	for _, e := range c.Env {
		var v string
		switch f := e.ValueFrom; {
		case f == nil:
			v = envRef.ReplaceAllStringFunc(e.Value, func(s string) string {
				if x, ok := vals[s[2:len(s)-1]]; ok {
					return x
				}
				return s
			})
		case f.FieldRef != nil && f.FieldRef.FieldPath == "status.podIP":
			v = ip
		case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
			v = name
		case f.ResourceFieldRef != nil && f.ResourceFieldRef.Resource == "limits.cpu" && f.ResourceFieldRef.Divisor.IsZero():
			q, ok := c.Resources.Limits[corev1.ResourceCPU]
			if !ok {
				return nil, nil, fmt.Errorf("env %s: limits.cpu without a CPU limit (the node's CPUs)", e.Name)
			}
			v = fmt.Sprint((q.MilliValue() + 999) / 1000)
		default:
			return nil, nil, fmt.Errorf("env %s: a source not modelled here", e.Name)
		}
		vals[e.Name] = v
		env = append(env, e.Name+"="+v)
	}
	for _, a := range c.Args {
		args = append(args, envRef.ReplaceAllStringFunc(a, func(s string) string {
			if x, ok := vals[s[2:len(s)-1]]; ok {
				return x
			}
			return s
		}))
	}
	return env, args, nil
}

// rolloutDeployment is `kubectl rollout status deployment/NAME`: every
// pod of the applied Deployment answers its readiness probe.
func (r *runbook) rolloutDeployment(name string, timeout time.Duration) error {
	if r.dep == nil || r.dep.d.Name != name {
		return fmt.Errorf("deployment %s not found", name)
	}
	probe := r.dep.d.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Scheme == corev1.URISchemeHTTPS {
		return fmt.Errorf("Deployment %s: only an HTTP readiness probe is modelled", name)
	}
	ctx, cancel := r.bound(timeout)
	defer cancel()
	for i, pod := range r.dep.pods {
		if err := waitProbe(ctx, "pod "+pod, func(ctx context.Context) (bool, string) {
			return r.deps.ready(ctx, i, probe.HTTPGet.Path)
		}); err != nil {
			return err
		}
	}
	return nil
}

// allocPods runs a Deployment's pods in podman on the StatefulSet's
// network, each at a fixed address of it (its pod IP), its port
// published on the host.
type allocPods struct {
	t       *testing.T
	e       *engine
	image   string
	network string
	port    int32
	secCtx  []string // podman flags of the pod's securityContext
	subnet  *net.IPNet
	urls    map[int]string
	running []string
}

func newAllocPods(t *testing.T, e *engine, image, network string, port int32, run []string) *allocPods {
	t.Helper()
	var nets []struct {
		Subnets []struct{ Subnet string } `json:"subnets"`
	}
	if err := json.Unmarshal(e.must(time.Minute, "network", "inspect", network), &nets); err != nil || len(nets) != 1 || len(nets[0].Subnets) == 0 {
		t.Fatalf("network inspect %s: %v", network, err)
	}
	_, sn, err := net.ParseCIDR(nets[0].Subnets[0].Subnet)
	if err != nil || sn.IP.To4() == nil {
		t.Fatalf("subnet %v: %v", nets[0].Subnets, err)
	}
	p := &allocPods{t: t, e: e, image: image, network: network, port: port, secCtx: run, subnet: sn, urls: map[int]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range p.running {
				out, _ := exec.Command(e.bin, append(append([]string{}, e.global...), "logs", "--tail", "30", n)...).CombinedOutput()
				t.Logf("---- %s ----\n%s", n, out)
			}
		}
		if len(p.running) > 0 {
			e.cmd(2*time.Minute, append([]string{"rm", "-f", "-v", "-t", "2"}, p.running...)...)
		}
	})
	return p
}

// podIP is an address high in the network's subnet, away from the
// addresses podman hands out in order to the storesvrs.
func (p *allocPods) podIP(i int) string {
	ip := slices.Clone(p.subnet.IP.To4())
	ip[3] = byte(200 + i)
	return ip.String()
}

func (p *allocPods) run(i int, name string, cmd, args, env, vols []string, ip string) {
	p.t.Helper()
	cname := p.network + "-" + name
	run := append([]string{"run", "-d", "--name", cname, "--network", p.network, "--ip", ip, "--hostname", name}, p.e.run...)
	run = append(run, p.secCtx...)
	for _, kv := range env {
		run = append(run, "-e", kv)
	}
	for _, v := range vols {
		if strings.HasPrefix(v, "emptydir-") {
			v = p.network + "-" + v // removed with the network's volumes
		}
		run = append(run, "-v", v)
	}
	addr := freeAddr(p.t)
	p.urls[i] = "http://" + addr
	run = append(run, "-p", fmt.Sprintf("%s:%d", addr, p.port))
	run = append(append(append(run, p.image), cmd...), args...)
	p.e.must(time.Minute, run...)
	p.running = append(p.running, cname)
}

func (p *allocPods) url(i int) string { return p.urls[i] }

func (p *allocPods) ready(ctx context.Context, i int, path string) (bool, string) {
	return probe(ctx, http.DefaultClient, p.urls[i]+path)
}

// callAuth posts a Connect JSON call with a bearer token ("" for none)
// through client and answers the status and body.
func callAuth(ctx context.Context, client *http.Client, u, body, token string) (int, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// runStatefulSetInstall runs docs/deploy.md's install block as written
// on podman pods, with the Secrets made from the operator's files
// (operatorFiles): the storesvrs with --auth-file, HTTPS and Raft mutual
// TLS from their Secret volumes, the allocsvrs (the HPA's minReplicas)
// with theirs, the monitoring objects decoded. Then a client takes IDs
// through an allocsvr with the client token, and the "seqctl from
// outside the cluster" block runs against pod 0 with the admin token
// and the CA, over HTTPS to localhost.
func runStatefulSetInstall(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("seqsvr-in-%d", os.Getpid())
	p := newSTSPods(t, e, image, prefix)
	dir := t.TempDir()
	rb := newRunbook(t, ctx, p, dir)
	rb.secure = true
	pool := operatorFiles(t, dir, rb.m, rb.api)
	p.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	p.token = inAdminTok
	p.run = podmanUser(rb.set.Spec.Template.Spec.SecurityContext)
	if len(rb.m.deploys) != 1 {
		t.Fatalf("%d Deployments", len(rb.m.deploys))
	}
	dep := rb.m.deploys[0]
	port := dep.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort
	allocs := newAllocPods(t, e, image, prefix, port, podmanUser(dep.Spec.Template.Spec.SecurityContext))
	rb.deps = allocs

	start := time.Now()
	rb.runBlock(doc, "Install, and every upgrade, in two steps")
	t.Logf("install block: %v", time.Since(start).Round(100*time.Millisecond))
	if n := len(rb.running); n != 3 || rb.dep == nil || len(rb.dep.pods) < 2 {
		t.Fatalf("after the install: %d storesvr pods, Deployment %+v", n, rb.dep)
	}
	// Every pod ran with every flag naming a Secret's file.
	for _, a := range rb.set.Spec.Template.Spec.Containers[0].Args {
		if strings.Contains(a, "=/etc/seqsvr/") {
			t.Logf("  storesvr runs with %s", a)
		}
	}

	// The store refuses a write without a token; the admin token creates
	// a tag over HTTPS (the CA trusted, localhost named).
	if code, body := callAuth(ctx, p.client, p.url(0)+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"install"}`, ""); code != http.StatusUnauthorized {
		t.Fatalf("CreateTag without a token: %d %s, want 401", code, body)
	}
	for {
		code, body := callAuth(ctx, p.client, p.url(0)+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"install"}`, inAdminTok)
		if code == http.StatusOK {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CreateTag with the admin token: %d %s", code, body)
		case <-time.After(200 * time.Millisecond):
		}
	}
	// A client through an allocsvr pod, from the host: the allocsvr's
	// port is plain HTTP in the manifest (no --tls-cert; its probes are
	// HTTP), so the client token goes over HTTP.
	a := allocs.url(0)
	if code, body := callAuth(ctx, http.DefaultClient, a+"/seqsvr.v1.AllocService/NextIDs", `{"tag":"install","count":3}`, ""); code != http.StatusUnauthorized {
		t.Fatalf("NextIDs without a token: %d %s, want 401", code, body)
	}
	var ids struct{ Ids []string }
	for {
		code, body := callAuth(ctx, http.DefaultClient, a+"/seqsvr.v1.AllocService/NextIDs", `{"tag":"install","count":3}`, inClientTok)
		if code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &ids); err != nil || len(ids.Ids) != 3 {
				t.Fatalf("NextIDs: %v %s", err, body)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("NextIDs through %s with the client token: %d %s", rb.dep.pods[0], code, body)
		case <-time.After(300 * time.Millisecond):
		}
	}
	t.Logf("IDs %v through allocsvr pod %s with the client token", ids.Ids, rb.dep.pods[0])

	rb.runBlock(doc, "seqctl from outside the cluster")
	t.Logf("install with the Secrets: 3 storesvrs (HTTPS, Raft mutual TLS, --auth-file), %d allocsvrs, seqctl with the admin token and CA over https://localhost; %v in all",
		len(rb.dep.pods), time.Since(start).Round(100*time.Millisecond))
}
