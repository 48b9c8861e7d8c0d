package nemesis

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Net puts each process in its own network namespace, joined by veth pairs
// to one bridge in the root namespace (where the harness's clients run), so
// partitions are real packet drops in the kernel: a blackhole route in the
// sender's namespace silently discards every packet to the blocked peer.
// This needs root and `ip` (iproute2) only; iptables/nftables are not
// required. Close removes every namespace and link it made; stale ones of
// dead harness processes are removed by NewNet.
type Net struct {
	guard  *guard
	prefix string
	subnet string // "10.B.C."
	names  []string
	ips    map[string]string
	mu     sync.Mutex
	blocks map[[2]string]bool
}

var netPrefixRE = regexp.MustCompile(`^jn([0-9]+)`)

// NetAvailable reports why namespaces cannot be used, or nil.
func NetAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("ip (iproute2) not installed")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns unusable: %v: %s", err, out)
	}
	return nil
}

// NewNet creates one namespace per name (e.g. s1, a1) with an address on
// a private /24, and the bridge.
func NewNet(names []string) (*Net, error) {
	if err := NetAvailable(); err != nil {
		return nil, err
	}
	cleanStale()
	pid := os.Getpid()
	n := &Net{
		prefix: fmt.Sprintf("jn%d", pid),
		subnet: fmt.Sprintf("10.%d.%d.", 100+pid%100, (pid/100)%250),
		ips:    map[string]string{},
		blocks: map[[2]string]bool{},
	}
	br := n.prefix + "b"
	// The guard is armed before anything exists, so even a crash half way
	// through leaves nothing behind.
	objs := []string{"link:" + br}
	for _, name := range names {
		objs = append(objs, "netns:"+n.prefix+name, "link:"+n.prefix+name+"h")
	}
	g, err := startGuard(objs)
	if err != nil {
		return nil, err
	}
	n.guard = g
	if err := n.run("ip", "link", "add", br, "type", "bridge"); err != nil {
		n.Close()
		return nil, err
	}
	steps := [][]string{
		{"ip", "addr", "add", n.subnet + "1/24", "dev", br},
		{"ip", "link", "set", br, "up"},
	}
	for i, name := range names {
		ns, ip := n.prefix+name, n.subnet+strconv.Itoa(10+i)
		n.names = append(n.names, name)
		n.ips[name] = ip
		host, peer := ns+"h", ns+"n"
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"ip", "link", "set", peer, "netns", ns},
			[]string{"ip", "link", "set", host, "master", br, "up"},
			[]string{"ip", "-n", ns, "addr", "add", ip + "/24", "dev", peer},
			[]string{"ip", "-n", ns, "link", "set", peer, "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := n.run(s...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

func (n *Net) run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Host is name's address ("" for names without a namespace).
func (n *Net) Host(name string) string { return n.ips[name] }

// Wrap is the command prefix that runs a program in name's namespace.
func (n *Net) Wrap(name string) []string {
	if _, ok := n.ips[name]; !ok {
		return nil
	}
	return []string{"ip", "netns", "exec", n.prefix + name}
}

// Block drops every packet from -> to (one direction).
func (n *Net) Block(from, to string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := [2]string{from, to}
	if n.blocks[k] || n.ips[from] == "" || n.ips[to] == "" {
		return nil
	}
	if err := n.run("ip", "-n", n.prefix+from, "route", "add", "blackhole", n.ips[to]+"/32"); err != nil {
		return err
	}
	n.blocks[k] = true
	return nil
}

// Cut blocks both directions between every a in as and every b in bs.
func (n *Net) Cut(as, bs []string) error {
	for _, a := range as {
		for _, b := range bs {
			if a == b {
				continue
			}
			if err := n.Block(a, b); err != nil {
				return err
			}
			if err := n.Block(b, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Uncut removes the blocks Cut(as, bs) added, leaving the others.
func (n *Net) Uncut(as, bs []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for _, a := range as {
		for _, b := range bs {
			for _, k := range [][2]string{{a, b}, {b, a}} {
				if !n.blocks[k] {
					continue
				}
				if err := n.run("ip", "-n", n.prefix+k[0], "route", "del", "blackhole", n.ips[k[1]]+"/32"); err != nil {
					errs = append(errs, err)
					continue
				}
				delete(n.blocks, k)
			}
		}
	}
	return errors.Join(errs...)
}

// Heal removes every block.
func (n *Net) Heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	for k := range n.blocks {
		if err := n.run("ip", "-n", n.prefix+k[0], "route", "del", "blackhole", n.ips[k[1]]+"/32"); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(n.blocks, k)
	}
	return errors.Join(errs...)
}

// Close deletes the namespaces (their veth ends go with them) and the
// bridge. Safe to call more than once.
func (n *Net) Close() {
	for _, name := range n.names {
		_ = exec.Command("ip", "netns", "del", n.prefix+name).Run()
		_ = exec.Command("ip", "link", "del", n.prefix+name+"h").Run()
	}
	_ = exec.Command("ip", "link", "del", n.prefix+"b").Run()
	if n.guard != nil {
		n.guard.disarm()
	}
}

// cleanStale removes namespaces and bridges left by harness processes that
// died without cleaning up (SIGKILL of `go test`).
func cleanStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	dead := map[int]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := netPrefixRE.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || alive(pid) {
			continue
		}
		dead[pid] = true
		_ = exec.Command("ip", "netns", "del", f[0]).Run()
	}
	for pid := range dead {
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("jn%db", pid)).Run()
	}
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
