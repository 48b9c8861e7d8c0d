package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fakeDeploy records the Deployment pods the runbook starts.
type fakeDeploy struct {
	names           []string
	args, env, vols [][]string
}

func (f *fakeDeploy) run(i int, name string, cmd, args, env, vols []string, ip string) {
	f.names = append(f.names, name)
	f.args, f.env, f.vols = append(f.args, args), append(f.env, env), append(f.vols, vols)
}
func (f *fakeDeploy) podIP(i int) string                                { return "10.0.0." + string(rune('1'+i)) }
func (f *fakeDeploy) ready(context.Context, int, string) (bool, string) { return true, "" }
func (f *fakeDeploy) url(int) string                                    { return "http://127.0.0.1:1" }

// installFake is a runbook of the install on recorded pods, with the
// operator's files in its directory.
func installFake(t *testing.T) (*runbook, *fakePods, *fakeDeploy) {
	if os.Getuid() != 0 {
		t.Skip("the Secret volumes' group (the fsGroup) is set as root")
	}
	f := &fakePods{t: t, running: map[int][]string{}, state: map[string]bool{}}
	d := &fakeDeploy{}
	r := newRunbook(t, context.Background(), f, t.TempDir())
	r.secure, r.deps = true, d
	operatorFiles(t, r.dir, r.m, r.api)
	return r, f, d
}

// TestRunbookInstallRecorded runs the install block on recorded pods
// (no podman): the storesvrs run with every flag naming a Secret's file
// and mount the Secrets as the kubelet lays them out (mode, group,
// items), the allocsvrs (the HPA's minReplicas) with the downward API's
// values in their args; a Secret before its namespace, a Secret volume
// its user cannot read, an item of no key and a ServiceMonitor naming no
// Secret are refused.
func TestRunbookInstallRecorded(t *testing.T) {
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	lines, err := runbookBlock(doc, "Install, and every upgrade, in two steps")
	if err != nil {
		t.Fatal(err)
	}
	r, f, d := installFake(t)
	if err := r.exec(lines[1]); err == nil || !strings.Contains(err.Error(), "namespace") {
		t.Errorf("%s before the namespace: %v", lines[1], err)
	}
	for _, l := range lines {
		if err := r.exec(l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if len(f.running) != 3 || len(d.names) != 2 {
		t.Fatalf("%d storesvrs, allocsvrs %v", len(f.running), d.names)
	}
	man := r.m.sets[0].Spec.Template.Spec.Containers[0].Args
	for ord, args := range f.running {
		if !slices.Equal(args, man) {
			t.Errorf("storesvr-%d runs %v, want the manifest's %v", ord, args, man)
		}
	}
	// The auth Secret's files: defaultMode 0440, group 65532 (fsGroup).
	auth := filepath.Join(r.dir, ".volumes", "storesvr-0-auth", "auth.json")
	st, err := os.Stat(auth)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o440 || st.Sys().(*syscall.Stat_t).Gid != 65532 {
		t.Errorf("auth.json: mode %v gid %d", st.Mode(), st.Sys().(*syscall.Stat_t).Gid)
	}
	// The allocsvr's TLS volume holds ca.crt alone (items): no key.
	if ents, _ := os.ReadDir(filepath.Join(r.dir, ".volumes", d.names[0]+"-tls")); len(ents) != 1 || ents[0].Name() != "ca.crt" {
		t.Errorf("the allocsvr's tls volume holds %v, want ca.crt alone", ents)
	}
	a := strings.Join(d.args[0], " ")
	if !strings.Contains(a, "--advertise-url=http://10.0.0.1:8080") || !strings.Contains(a, "--node-id="+d.names[0]) || strings.Contains(a, "$(") {
		t.Errorf("allocsvr args %s: the downward API's values not substituted", a)
	}
	if !slices.Contains(d.env[0], "GOMAXPROCS=2") || !slices.Contains(d.env[0], "POD_IP=10.0.0.1") {
		t.Errorf("allocsvr env %v", d.env[0])
	}

	// A mode the pod's user cannot read, with no fsGroup to lend a group.
	sc := &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(65532)), RunAsGroup: ptrTo(int64(65532))}
	v := corev1.Volume{Name: "auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "seqsvr-auth", DefaultMode: ptrTo(int32(0o440))}}}
	if _, err := r.secretVolume("p", v, sc); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Errorf("0440 root-owned, no fsGroup: %v", err)
	}
	sc.FSGroup = ptrTo(int64(65532))
	v.Secret.DefaultMode = ptrTo(int32(0o400))
	if _, err := r.secretVolume("p", v, sc); err != nil {
		t.Errorf("0400 with an fsGroup (the kubelet adds 0440): %v", err)
	}
	v.Secret.Items = []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}}
	if _, err := r.secretVolume("p", v, sc); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("an item of no key: %v", err)
	}

	r2, _, _ := installFake(t)
	r2.nsApplied = true
	r2.data["seqsvr-tls"] = map[string][]byte{"ca.crt": nil}
	if err := r2.applyMonitoring("monitoring"); err == nil || !strings.Contains(err.Error(), "seqsvr-metrics") {
		t.Errorf("monitoring without Secret seqsvr-metrics: %v", err)
	}
}
