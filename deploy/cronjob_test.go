package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestBackupCronJobRuns runs the backup CronJob's container as its
// manifest writes it (the image's seqctl: the test's build of it, its
// args and environment, each volume a directory, the Secrets' files from
// secrets.example.yaml) against a real storesvr, three times: each run
// leaves a backup `seqctl backup inspect` reads, and with --keep lowered
// to 1 for the last run only the newest stays. The store is plain HTTP
// here: SEQCTL_STORE names it and SEQCTL_CA is left out.
func TestBackupCronJobRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a storesvr")
	}
	m := readManifests(t)
	if len(m.cronJobs) != 1 {
		t.Fatalf("%d CronJobs, want the backup one", len(m.cronJobs))
	}
	pod := m.cronJobs[0].Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "seqctl" || len(c.Args) < 2 || c.Args[0] != "backup" || !strings.HasSuffix(c.Args[1], "/") {
		t.Fatalf("CronJob runs %v %v, want seqctl backup DIR/ ...", c.Command, c.Args)
	}
	dir := t.TempDir()
	sa := startServing(t, "storesvr", func() []string { return []string{freeAddr(t), freeAddr(t)} },
		func(a []string) []string {
			return []string{"--node-id", "s1", "--bootstrap", "--http-addr", a[0], "--raft-addr", a[1], "--data-dir", filepath.Join(dir, "s1-"+a[1])}
		},
		func(a []string) string { return "http://" + a[0] + "/readyz" })

	// Each mount a directory of the test; a Secret's items written there.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		local := filepath.Join(dir, "volumes", vm.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			t.Fatal(err)
		}
		mounts[vm.MountPath] = local
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				writeSecretItems(t, exampleSecret(t, m, v.Secret.SecretName), v.Secret, local)
			}
		}
	}
	local := func(s string) string {
		for mp, l := range mounts {
			if rest, ok := strings.CutPrefix(s, mp); ok && (rest == "" || rest[0] == '/') {
				return l + rest
			}
		}
		return s
	}
	var env []string
	for _, e := range c.Env {
		switch e.Name {
		case "SEQCTL_STORE":
			env = append(env, e.Name+"=http://"+sa[0])
		case "SEQCTL_CA":
		default:
			env = append(env, e.Name+"="+local(e.Value))
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = local(a)
	}
	backups := local(c.Args[1])
	run := func(args []string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "seqctl"), args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("seqctl %v: %v\n%s", args, err, out)
		}
	}
	run(args)
	run(args)
	files, _ := filepath.Glob(filepath.Join(backups, "seqsvr-*.bak"))
	if len(files) != 2 {
		t.Fatalf("after two runs: %v", files)
	}
	keep := slices.Index(args, "--keep")
	if keep < 0 || keep+1 >= len(args) {
		t.Fatalf("CronJob args %v: want --keep N", c.Args)
	}
	last := append([]string{}, args...)
	last[keep+1] = "1"
	run(last)
	files, _ = filepath.Glob(filepath.Join(backups, "seqsvr-*.bak"))
	if len(files) != 1 {
		t.Fatalf("after a run with --keep 1: %v", files)
	}
	out, err := exec.Command(filepath.Join(binDir, "seqctl"), "backup", "inspect", files[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("seqctl backup inspect: %v\n%s", err, out)
	}
	t.Logf("the CronJob's seqctl %v ran 3 times:\n%s", c.Args, out)
}

func exampleSecret(t *testing.T, m *manifests, name string) *corev1.Secret {
	t.Helper()
	for _, s := range m.secrets {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no example Secret %s", name)
	return nil
}

// writeSecretItems writes what a Secret volume shows: its items, or every
// key.
func writeSecretItems(t *testing.T, s *corev1.Secret, v *corev1.SecretVolumeSource, dir string) {
	t.Helper()
	items := v.Items
	if len(items) == 0 {
		for k := range s.StringData {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		if err := os.WriteFile(filepath.Join(dir, it.Path), []byte(s.StringData[it.Key]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
