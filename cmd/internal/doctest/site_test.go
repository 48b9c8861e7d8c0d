package doctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// host is one storesvr member on the test machine: the doc's 127.0.0.1
// ports 700N/808N and its host 10.0.0.N (:7001, :8081) both become these
// free ports, and data/sN and that host's /var/lib/seqsvr this directory.
type host struct {
	id         string
	raft, http int
	data       string
}

func (h *host) base() string { return "http://127.0.0.1:" + strconv.Itoa(h.http) }

// site is the test machine the blocks run on: the binaries, a working
// directory (where a block's relative paths such as admin.token land),
// four member hosts and one allocsvr.
type site struct {
	t         *testing.T
	root, bin string
	hosts     []*host   // s1..s4
	alloc     int       // the allocsvr's HTTP port (the doc's 8080)
	bak       string    // the doc's /backups/
	bg        []*script // the blocks startBackground ran
}

// newSite builds the binaries (storesvr, allocsvr, seqctl) and claims the
// ports. It skips the test under -short, and without bash or curl
// unless CI is set.
func newSite(t *testing.T) *site {
	t.Helper()
	launchtest.SkipShort(t)
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" { // a skip there would hide a doc gone wrong
				t.Fatalf("no %s under CI: %v", tool, err)
			}
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	bin := launchtest.BinDir(t)
	if err := launch.BuildPackages(context.Background(), bin, []string{launch.BaseTag}, "./cmd/seqctl"); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s := &site{t: t, root: root, bin: bin, alloc: freePort(t), bak: filepath.Join(root, "bak")}
	for i := 1; i <= 4; i++ {
		id := "s" + strconv.Itoa(i)
		s.hosts = append(s.hosts, &host{id: id, raft: freePort(t), http: freePort(t), data: filepath.Join(root, "data", id)})
	}
	for _, d := range []string{s.bak, filepath.Join(root, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *site) host(id string) *host {
	for _, h := range s.hosts {
		if h.id == id {
			return h
		}
	}
	s.t.Fatalf("no host %s", id)
	return nil
}

// sub is one substitution of what cannot be the same on the test machine.
// apply returns the block rewritten and how many places it changed.
type sub struct {
	what  string
	apply func(block string) (string, int)
}

// rewrite applies subs to block in order. A substitution that matches
// nothing fails the test (the doc changed under it), and so does a
// rewritten block that still names something of a real machine.
func (s *site) rewrite(block string, subs ...sub) string {
	s.t.Helper()
	for _, b := range subs {
		var n int
		block, n = b.apply(block)
		if n == 0 {
			s.t.Fatalf("substitution %q matches nothing in the block:\n%s", b.what, block)
		}
	}
	for _, real := range []string{"10.0.0.", "/backups", "/var/lib", "make build"} {
		if strings.Contains(block, real) {
			s.t.Fatalf("the block still names %q after the substitutions (a new line the test does not know):\n%s", real, block)
		}
	}
	return block
}

func regexSub(what, re string, f func(m []string) string) sub {
	r := regexp.MustCompile(re)
	return sub{what, func(block string) (string, int) {
		n := 0
		out := r.ReplaceAllStringFunc(block, func(m string) string {
			n++
			return f(r.FindStringSubmatch(m))
		})
		return out, n
	}}
}

// dropMakeBuild: the test built the binaries.
func dropMakeBuild() sub {
	return regexSub("make build line dropped", `(?m)^make build\n`, func([]string) string { return "" })
}

// localPorts: the fixed 127.0.0.1 ports 700N, 808N (N = 1..4) and 8080.
func (s *site) localPorts() sub {
	return regexSub("127.0.0.1:700N/808N -> free ports", `127\.0\.0\.1:(700[1-4]|808[0-4])\b`, func(m []string) string {
		p, _ := strconv.Atoi(m[1])
		switch {
		case p == 8080:
			return fmt.Sprintf("127.0.0.1:%d", s.alloc)
		case p > 8080:
			return fmt.Sprintf("127.0.0.1:%d", s.hosts[p-8081].http)
		default:
			return fmt.Sprintf("127.0.0.1:%d", s.hosts[p-7001].raft)
		}
	})
}

// hostAddrs: host 10.0.0.N is member sN on 127.0.0.1, its :7001 and :8081
// that member's free ports.
func (s *site) hostAddrs() sub {
	return regexSub("10.0.0.N[:7001|:8081] -> 127.0.0.1 and member N's ports", `10\.0\.0\.([1-4])(:(7001|8081))?\b`, func(m []string) string {
		h := s.hosts[m[1][0]-'1']
		switch m[3] {
		case "7001":
			return fmt.Sprintf("127.0.0.1:%d", h.raft)
		case "8081":
			return fmt.Sprintf("127.0.0.1:%d", h.http)
		}
		return "127.0.0.1"
	})
}

// dataDirs: the relative data/ of a cluster by hand.
func (s *site) dataDirs() sub {
	return regexSub("data/ -> the test's data dir", `(^|[\s=])data/`, func(m []string) string {
		return m[1] + filepath.Join(s.root, "data") + "/"
	})
}

// binDir: bin/ holds the test's binaries.
func (s *site) binDir() sub {
	return regexSub("bin/ -> the test's binaries", `(^|[\s=(])bin/`, func(m []string) string {
		return m[1] + s.bin + "/"
	})
}

// backups: the doc's /backups/ directory.
func (s *site) backups() sub {
	return regexSub("/backups/ -> a temporary dir", `/backups/`, func([]string) string { return s.bak + "/" })
}

// backupFile: the dated example name stands for the file the Backups
// block wrote.
func backupFile(file string) sub {
	return regexSub("the example backup name -> the file the Backups block wrote", `/backups/seqsvr-20261126T051500Z\.bak`, func([]string) string { return file })
}

// hostDataDirs: /var/lib/seqsvr on the host a command runs on, known by
// the command's --node-id.
func (s *site) hostDataDirs() sub {
	node := regexp.MustCompile(`--node-id (s[1-4])\b`)
	return sub{"/var/lib/seqsvr -> the data dir of the command's --node-id", func(block string) (string, int) {
		n := 0
		out := eachCommand(block, func(cmd string) string {
			m := node.FindStringSubmatch(cmd)
			if m == nil || !strings.Contains(cmd, "/var/lib/seqsvr") {
				return cmd
			}
			n++
			return strings.ReplaceAll(cmd, "/var/lib/seqsvr", s.host(m[1]).data)
		})
		return out, n
	}}
}

// background: a storesvr the doc runs in the foreground on its own host
// (under systemd, say) runs in the background here, so the next command
// and the test go on.
func background() sub {
	return sub{"a host's foreground storesvr -> in the background", func(block string) (string, int) {
		n := 0
		out := eachCommand(block, func(cmd string) string {
			body := strings.TrimRight(cmd, "\n")
			if !strings.HasPrefix(strings.TrimSpace(body), "bin/storesvr ") || strings.HasSuffix(body, "&") {
				return cmd
			}
			n++
			lines := strings.Split(body, "\n")
			last := lines[len(lines)-1]
			if i := strings.Index(last, " #"); i >= 0 { // a comment after the command
				lines[len(lines)-1] = last[:i] + " &" + last[i:]
			} else {
				lines[len(lines)-1] = last + " &"
			}
			return strings.Join(lines, "\n") + "\n"
		})
		return out, n
	}}
}
