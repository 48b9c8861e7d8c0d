package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// A drill fires alerts on a secure cluster of real processes watched by
// a real Prometheus, runs each one's runbook (docs/alerts.md) with the
// firing alert's labels, checks that its commands show the cause, then
// removes the cause (the runbook's fix blocks, or what its prose tells
// an operator to do) and, where the drill says so, waits for the alert
// to resolve.
type drill struct {
	name   string
	alerts []string // every alert whose runbook it runs
	opts   func(*launch.Options)
	root   bool // opts mounts a tmpfs
	faults bool // the servers are -tags faults builds (an injected clock offset)
	run    func(d *drillEnv)
}

// TestAlertRunbookDrills runs every drill, each on a cluster of its own
// and a Prometheus of its own
// (3 storesvrs, 1 allocsvr, --auth-file, HTTPS, client certificates),
// with alerts.yml time-compressed (compressRules).
func TestAlertRunbookDrills(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (make test-packages installs the Debian package)")
	}
	launchtest.SkipShort(t)
	books, preamble := runbooks(t)
	for _, dr := range drills {
		t.Run(dr.name, func(t *testing.T) {
			// Drills mostly wait (for rules, leases, elections): as many
			// run at once as -parallel allows (GOMAXPROCS by default).
			t.Parallel()
			if dr.root && os.Geteuid() != 0 {
				t.Skip("mounts a tmpfs: needs root")
			}
			d := newDrill(t, prom, dr, books, preamble)
			dr.run(d)
		})
	}
}

// compressRules is alerts.yml on a test's time scale: every for: 1s,
// every range or offset of N minutes 2N seconds, and the backup age of 26 h 20 s.
// The conditions stay the rules' own; promtool's alerts_test.yml checks
// their real durations.
func compressRules(rules []byte) []byte {
	rules = cutFor(rules)
	rules = regexp.MustCompile(`\[(\d+)m\]`).ReplaceAllFunc(rules, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[1 : len(m)-2]))
		return []byte(fmt.Sprintf("[%ds]", 2*n))
	})
	rules = regexp.MustCompile(`offset (\d+)m\b`).ReplaceAllFunc(rules, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[len("offset ") : len(m)-1]))
		return []byte(fmt.Sprintf("offset %ds", 2*n))
	})
	return regexp.MustCompile(`26 \* 3600`).ReplaceAll(rules, []byte("20"))
}

// drillEnv is one drill's cluster, Prometheus and runbooks.
type drillEnv struct {
	t        *testing.T
	ctx      context.Context
	c        *launch.Cluster
	sec      *launch.Security
	prom     string // Prometheus's base URL
	dir      string
	books    map[string]runbook
	preamble string
	env      []string // the operator's: seqctl on PATH, SEQCTL_*
}

func newDrill(t *testing.T, prom string, dr drill, books map[string]runbook, preamble string) *drillEnv {
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "sec"))
	if err != nil {
		t.Fatal(err)
	}
	launchtest.AddScraper(t, sec.AuthFile)
	opts := launch.Options{Stores: 3, Allocs: 1, Security: sec}
	if dr.opts != nil {
		dr.opts(&opts)
	}
	ctx := launchtest.Context(t, 4*time.Minute)
	bin := launchtest.BinDir(t)
	if dr.faults {
		opts.BinDir = filepath.Join(dir, "bin-faults")
		if err := launch.Build(ctx, opts.BinDir, "faults"); err != nil {
			t.Fatal(err)
		}
	}
	c := launchtest.Start(t, opts)
	if err := launch.BuildPackages(ctx, bin, []string{launch.BaseTag}, "./cmd/seqctl"); err != nil {
		t.Fatal(err)
	}
	d := &drillEnv{t: t, ctx: ctx, c: c, sec: sec, dir: dir, books: books, preamble: preamble,
		env: append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"SEQCTL_STORE="+strings.Join(c.StoreURLs(), ","), "SEQCTL_ALLOC="+procURLs(c.Allocs),
			"SEQCTL_TOKEN_FILE="+sec.AdminTokenFile, "SEQCTL_CA="+sec.CAFile,
			"SEQCTL_CERT="+sec.CertFile, "SEQCTL_KEY="+sec.KeyFile)}
	d.prom = startPrometheus(t, prom, dir, sec, c, compressRules)
	poll.UntilCtx(ctx, t, "every target up", func() bool { return len(promQuery(t, d.prom, `up == 1`)) == len(c.All()) })
	return d
}

func procURLs(ps []*launch.Proc) string {
	var urls []string
	for _, p := range ps {
		urls = append(urls, p.URL())
	}
	return strings.Join(urls, ",")
}

// firing waits until alert fires and returns the labels of one of its
// firing instances; with match, the first whose labels match says true.
func (d *drillEnv) firing(alert string, match func(map[string]string) bool) map[string]string {
	d.t.Helper()
	var labels map[string]string
	poll.UntilCtx(d.ctx, d.t, alert+" firing", func() bool {
		for _, l := range d.alerts(alert, "firing") {
			if match == nil || match(l) {
				labels = l
				return true
			}
		}
		return false
	})
	d.t.Logf("%s firing: %v", alert, labels)
	return labels
}

// resolved waits until alert is neither pending nor firing.
func (d *drillEnv) resolved(alert string) {
	d.t.Helper()
	poll.UntilCtx(d.ctx, d.t, alert+" resolved", func() bool { return len(d.alerts(alert, "")) == 0 })
	d.t.Logf("%s resolved", alert)
}

// alerts are the labels of alert's instances in state ("" for any).
func (d *drillEnv) alerts(alert, state string) []map[string]string {
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	promGet(d.t, d.prom+"/api/v1/alerts", &out)
	var ls []map[string]string
	for _, a := range out.Data.Alerts {
		if a.Labels["alertname"] == alert && (state == "" || a.State == state) {
			ls = append(ls, a.Labels)
		}
	}
	return ls
}

// diagnose runs alert's ```sh blocks as an operator would, the alert's
// labels in upper-case variables (INSTANCE, TAG, USE, ...) and extra
// (NAME=VALUE) beside them, and returns what they printed. A command of
// them may fail (seqctl status exits 1 while a process is down): what
// they show is the point.
func (d *drillEnv) diagnose(alert string, labels map[string]string, extra ...string) string {
	d.t.Helper()
	return d.blocks(alert, "", d.books[alert].diagnose, labels, extra)
}

// fix runs alert's ```sh fix blocks, each with errexit: a fix that fails
// fails the drill.
func (d *drillEnv) fix(alert string, labels map[string]string, extra ...string) string {
	d.t.Helper()
	return d.blocks(alert, "fix", d.books[alert].fix, labels, extra)
}

// blocks runs the blocks of alert's runbook, of kind "" (diagnosis) or
// "fix" (errexit, and a failure fails the drill), and returns their
// output.
func (d *drillEnv) blocks(alert, kind string, blocks []string, labels map[string]string, extra []string) string {
	d.t.Helper()
	if len(blocks) == 0 {
		d.t.Fatalf("%s: no ```sh %s block in docs/alerts.md", alert, kind)
	}
	var out strings.Builder
	for _, b := range blocks {
		o, err := d.shell(b, labels, extra, kind == "fix")
		out.WriteString(o)
		if err != nil && kind == "fix" {
			d.t.Fatalf("%s: the runbook's fix failed: %v\n%s", alert, err, o)
		}
	}
	d.t.Logf("%s runbook %s output:\n%s", alert, kind, out.String())
	return out.String()
}

// labelName is an alert label an operator's variable is made of.
var labelName = regexp.MustCompile(`^[a-z_]+$`)

func (d *drillEnv) shell(block string, labels map[string]string, extra []string, errexit bool) (string, error) {
	env := append([]string{}, d.env...)
	for k, v := range labels {
		if labelName.MatchString(k) {
			env = append(env, strings.ToUpper(k)+"="+v)
		}
	}
	env = append(env, extra...)
	script := d.preamble + block
	if errexit {
		script = "set -e -o pipefail\n" + script
	}
	ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env, cmd.Dir = env, d.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// shows fails the drill unless out matches every pattern.
func (d *drillEnv) shows(alert, out string, patterns ...string) {
	d.t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			d.t.Errorf("%s: the runbook's commands do not show %q", alert, p)
		}
	}
}

// follower is a storesvr that is not the leader, and the leader.
func (d *drillEnv) follower() (s, leader *launch.Proc) {
	d.t.Helper()
	leader, err := d.c.Leader(d.ctx)
	if err != nil {
		d.t.Fatal(err)
	}
	if s = d.c.Stores[2]; s == leader {
		s = d.c.Stores[1]
	}
	return s, leader
}

// proc is the process whose address is a firing alert's instance label.
func (d *drillEnv) proc(labels map[string]string) *launch.Proc {
	d.t.Helper()
	for _, p := range d.c.All() {
		if p.HTTPAddr == labels["instance"] {
			return p
		}
	}
	d.t.Fatalf("no process at instance %q", labels["instance"])
	return nil
}

// metric is the value of the first sample of an instant query, NaN-free.
func (d *drillEnv) metric(q string) (float64, bool) {
	res := promQuery(d.t, d.prom, q)
	if len(res) == 0 {
		return 0, false
	}
	var s struct{ Value [2]any }
	if err := json.Unmarshal(res[0], &s); err != nil {
		d.t.Fatal(err)
	}
	v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	return v, err == nil
}
