package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// engine runs podman (or buildah for the inspection) with a bound on
// every call, so a wedged runtime fails the test instead of hanging it.
type engine struct {
	t      *testing.T
	bin    string
	global []string // podman flags before the subcommand (--runtime)
	run    []string // flags for every podman run
}

func (e *engine) cmd(timeout time.Duration, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var stderr bytes.Buffer
	c := exec.CommandContext(ctx, e.bin, append(append([]string{}, e.global...), args...)...)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", e.bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (e *engine) must(timeout time.Duration, args ...string) []byte {
	e.t.Helper()
	out, err := e.cmd(timeout, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestImage checks the image `make image` built (SEQSVR_IMAGE names it).
// Always: its config (non-root user, the data dir volume, the version
// labels) and its files (static binaries, CA certificates, passwd). Then,
// where this machine can run containers, the services of compose.yaml run
// from it as written and answer NextIDs, and the storesvr StatefulSet's
// pods bootstrap and scale up from --ordinal-domain (runStatefulSet);
// where it cannot, each binary's --version runs from the image's files.
// The test log says which held.
func TestImage(t *testing.T) {
	image := os.Getenv("SEQSVR_IMAGE")
	if image == "" {
		t.Skip("SEQSVR_IMAGE is not set: make test-deploy builds the image and sets it")
	}
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal("podman is missing (make test-packages installs it)")
	}
	e := &engine{t: t, bin: bin}

	var inspect []struct {
		Config struct {
			User    string
			Cmd     []string
			Env     []string
			Labels  map[string]string
			Volumes map[string]struct{}
		}
	}
	if err := json.Unmarshal(e.must(time.Minute, "image", "inspect", image), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	cfg := inspect[0].Config
	if u := cfg.User; u == "" || u == "root" || u == "0" || strings.HasPrefix(u, "0:") {
		t.Errorf("image user %q: must not be root", u)
	}
	if _, ok := cfg.Volumes["/var/lib/seqsvr"]; !ok {
		t.Errorf("volumes %v: want /var/lib/seqsvr", cfg.Volumes)
	}
	version := cfg.Labels["org.opencontainers.image.version"]
	for _, l := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.created", "org.opencontainers.image.source"} {
		if v := cfg.Labels[l]; v == "" || v == "unknown" {
			t.Errorf("label %s = %q", l, v)
		}
	}

	files := imageFiles(t, e, image)
	for _, f := range []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
		if len(files[f]) == 0 {
			t.Errorf("/%s missing or empty", f)
		}
	}
	uid := strings.SplitN(cfg.User, ":", 2)[0]
	if !strings.Contains(string(files["etc/passwd"]), ":x:"+uid+":") {
		t.Errorf("/etc/passwd has no user %s", uid)
	}
	hostBins := t.TempDir()
	for _, b := range []string{"storesvr", "allocsvr", "seqctl"} {
		content := files["usr/local/bin/"+b]
		if len(content) == 0 {
			t.Errorf("/usr/local/bin/%s missing", b)
			continue
		}
		if err := staticELF(content); err != nil {
			t.Errorf("/usr/local/bin/%s: %v", b, err)
		}
		if err := os.WriteFile(filepath.Join(hostBins, b), content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		return
	}

	if !e.canRun(t, image) {
		// Inspection only: the image's own binaries still run, here.
		for _, b := range []string{"storesvr", "allocsvr", "seqctl"} {
			out, err := exec.Command(filepath.Join(hostBins, b), "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), version) {
				t.Errorf("%s --version: %v %q, want version %q", b, err, out, version)
			}
		}
		return
	}
	// The default command and each binary run in a container.
	for _, args := range [][]string{nil, {"allocsvr", "--version"}, {"seqctl", "--version"}} {
		out, err := e.cmd(time.Minute, append(append(append([]string{"run", "--rm"}, e.run...), image), args...)...)
		if err != nil || !strings.Contains(string(out), version) {
			t.Errorf("run %v: %v %q, want version %q", args, err, out, version)
		}
	}
	t.Run("compose", func(t *testing.T) { runCompose(t, e, image) })
	t.Run("compose-prometheus", func(t *testing.T) { runComposePrometheus(t, e, image) })
	t.Run("statefulset", func(t *testing.T) { runStatefulSet(t, e, image) })
	t.Run("statefulset-install", func(t *testing.T) { runStatefulSetInstall(t, e, image) })
	t.Run("statefulset-restore", func(t *testing.T) { runStatefulSetRestore(t, e, image) })
	t.Run("statefulset-recover", func(t *testing.T) { runStatefulSetRecover(t, e, image) })
	t.Run("token-rotation", func(t *testing.T) { runTokenRotation(t, e, image) })
}

// imageFiles is every regular file of the image, by path without the
// leading /, read from `podman export` of a created (never started)
// container.
func imageFiles(t *testing.T, e *engine, image string) map[string][]byte {
	t.Helper()
	id := strings.TrimSpace(string(e.must(time.Minute, "create", image)))
	defer e.cmd(time.Minute, "rm", "-f", "-v", id)
	tarball := e.must(2*time.Minute, "export", id)
	files := map[string][]byte{}
	r := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			files[strings.TrimPrefix(h.Name, "/")] = b
		}
	}
	return files
}

// staticELF fails for an executable that needs a dynamic loader or shared
// libraries: FROM scratch has neither.
func staticELF(b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (has an interpreter)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v", libs)
	}
	return nil
}

// canRun finds podman settings that start a container here: the
// defaults, else runc with explicit ulimits (crun refuses a host with
// cgroup v1/hybrid controllers, and a root without CAP_SYS_RESOURCE cannot
// raise the limits podman sets by default). Only an OCI runtime refusal
// means "cannot run"; any other failure is the image's and fails the test.
func (e *engine) canRun(t *testing.T, image string) bool {
	t.Helper()
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	limits := []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Cur), "--ulimit", "nproc=4096:4096"}
	var refusals []string
	for _, try := range []struct{ global, run []string }{
		{nil, nil},
		{[]string{"--runtime", "runc"}, limits},
	} {
		e.global, e.run = try.global, try.run
		out, err := e.cmd(time.Minute, append(append([]string{"run", "--rm"}, e.run...), image)...)
		if err == nil {
			t.Logf("containers run here (podman %s run %s): compose.yaml and the StatefulSet run as clusters", strings.Join(e.global, " "), strings.Join(e.run, " "))
			if !strings.Contains(string(out), "storesvr") {
				t.Errorf("the default command printed %q, want storesvr's --version", out)
			}
			return true
		}
		if !strings.Contains(err.Error(), "OCI") {
			t.Fatalf("the image's default command failed: %v", err)
		}
		refusals = append(refusals, err.Error())
	}
	t.Logf("containers cannot run here, the image is checked by inspection only: %s", strings.Join(refusals, "; "))
	return false
}

// runCompose starts compose.yaml's services with podman run, as written
// (image, command, hostname, environment, ports on free host ports, a
// network where each service's name resolves), and checks the cluster
// answers: a tag created on a storesvr, NextIDs and NextSnowflakeIDs on
// every allocsvr, unique IDs.
func runCompose(t *testing.T, e *engine, image string) {
	c := readCompose(t)
	names, urls := startCompose(t, e, image, fmt.Sprintf("seqsvr-test-%d", os.Getpid()), nil)
	var storeURL string
	var allocURLs []string
	for _, n := range names {
		switch c.Services[n].Command[0] {
		case "storesvr":
			if storeURL == "" {
				storeURL = urls[n]
			}
		case "allocsvr":
			allocURLs = append(allocURLs, urls[n])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	postOK(ctx, t, storeURL+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"image","step":"100"}`, nil)
	seen := map[string]bool{}
	for _, a := range allocURLs {
		var ids struct{ Ids []string }
		postOK(ctx, t, a+"/seqsvr.v1.AllocService/NextIDs", `{"tag":"image","count":50}`, &ids)
		var sf struct{ Ids []string }
		postOK(ctx, t, a+"/seqsvr.v1.AllocService/NextSnowflakeIDs", `{"count":5}`, &sf)
		if len(ids.Ids) != 50 || len(sf.Ids) != 5 {
			t.Fatalf("%s: %d segment IDs, %d snowflake IDs", a, len(ids.Ids), len(sf.Ids))
		}
		for _, id := range append(ids.Ids, sf.Ids...) {
			if seen[id] {
				t.Fatalf("ID %s answered twice", id)
			}
			seen[id] = true
		}
	}
	t.Logf("compose cluster from %s: %d storesvrs, %d allocsvrs answered %d unique IDs", image, len(names)-len(allocURLs), len(allocURLs), len(seen))
}

// startCompose runs compose.yaml's services as runCompose describes,
// stores first, each with the podman run flags extra gives it (nil: none,
// as written), and returns the services in start order and each one's
// URL on the host.
func startCompose(t *testing.T, e *engine, image, prefix string, extra func(name string, s composeService) []string) ([]string, map[string]string) {
	t.Helper()
	c := readCompose(t)
	createNetwork(t, e, prefix)
	var started []string
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range started {
				out, _ := exec.Command(e.bin, append(append([]string{}, e.global...), "logs", "--tail", "30", n)...).CombinedOutput()
				t.Logf("---- %s ----\n%s", n, out)
			}
		}
		if len(started) > 0 {
			e.cmd(2*time.Minute, append([]string{"rm", "-f", "-v", "-t", "2"}, started...)...)
		}
	})
	names := make([]string, 0, len(c.Services))
	for n := range c.Services {
		names = append(names, n)
	}
	// Stores first (allocsvrs depend on them), each in name order.
	sort.Slice(names, func(i, j int) bool {
		si, sj := c.Services[names[i]].Command[0], c.Services[names[j]].Command[0]
		if si != sj {
			return si > sj // storesvr before allocsvr
		}
		return names[i] < names[j]
	})
	urls := map[string]string{} // service -> http://127.0.0.1:PORT
	for _, n := range names {
		s := c.Services[n]
		if !strings.HasPrefix(s.Image, "${SEQSVR_IMAGE") {
			t.Fatalf("%s: image %q, want ${SEQSVR_IMAGE:-...}", n, s.Image)
		}
		args := append([]string{"run", "-d", "--name", prefix + "-" + n, "--network", prefix, "--network-alias", n, "--hostname", s.Hostname}, e.run...)
		if s.Restart != "" {
			args = append(args, "--restart", s.Restart)
		}
		if s.StopGracePeriod != "" {
			d, err := time.ParseDuration(s.StopGracePeriod)
			if err != nil {
				t.Fatalf("%s: stop_grace_period: %v", n, err)
			}
			args = append(args, "--stop-timeout", fmt.Sprint(int(d.Seconds())))
		}
		keys := make([]string, 0, len(s.Environment))
		for k := range s.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "-e", k+"="+s.Environment[k])
		}
		for _, p := range s.Ports {
			m := composePort.FindStringSubmatch(p)
			host := freeAddr(t)
			args = append(args, "-p", host+":"+m[2])
			urls[n] = "http://" + host
		}
		if extra != nil {
			args = append(args, extra(n, s)...)
		}
		args = append(append(args, image), s.Command...)
		e.must(time.Minute, args...)
		started = append(started, prefix+"-"+n)
	}
	return names, urls
}

// postOK posts a Connect JSON call until it answers 200 (the cluster
// elects a leader, the allocsvrs find it), decoding the answer into out.
func postOK(ctx context.Context, t *testing.T, url, body string, out any) {
	t.Helper()
	last := ""
	for {
		res, err := http.Post(url, "application/json", strings.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				if out != nil {
					if err := json.Unmarshal(b, out); err != nil {
						t.Fatalf("%s: %v: %s", url, err, b)
					}
				}
				return
			}
			last = fmt.Sprintf("%s: %s", res.Status, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("POST %s %s: %s", url, body, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestStaticELF(t *testing.T) {
	// The image's binaries are checked by TestImage; a system binary linked
	// against libc must be refused.
	for _, dyn := range []string{"/bin/ls", "/usr/bin/env"} {
		b, err := os.ReadFile(dyn)
		if err != nil {
			continue
		}
		if staticELF(b) == nil {
			t.Errorf("%s passes as static", dyn)
		}
		return
	}
	t.Skip("no dynamically linked binary to check against")
}
