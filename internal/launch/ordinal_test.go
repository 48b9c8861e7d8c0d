package launch

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/faults"
)

// The StatefulSet mode's layout: pods store-0.. on one port pair, each on
// an address of its own, flags derived from the pod name, and names every
// process resolves to those addresses.
func TestOrdinalLayout(t *testing.T) {
	dir := t.TempDir()
	c, err := New(Options{BinDir: "/bin", Dir: dir, Stores: 3, Allocs: 1, Ordinal: "st.test"})
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := os.ReadFile(hostsFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	_, port0, _ := net.SplitHostPort(c.Stores[0].HTTPAddr)
	_, raft0, _ := net.SplitHostPort(c.Stores[0].RaftAddr)
	for i, s := range c.Stores {
		host, port, _ := net.SplitHostPort(s.HTTPAddr)
		_, rport, _ := net.SplitHostPort(s.RaftAddr)
		if host != OrdinalHost(i+1) || port != port0 || rport != raft0 {
			t.Errorf("%s at %s raft %s, want %s:%s raft port %s", s.Name, s.HTTPAddr, s.RaftAddr, OrdinalHost(i+1), port0, raft0)
		}
		if s.NodeID != OrdinalNodeID(i+1) || !slices.Contains(s.Env, OrdinalHostnameEnv+"="+s.NodeID) {
			t.Errorf("%s: node %q env %q", s.Name, s.NodeID, s.Env)
		}
		args := strings.Join(s.Args(), " ")
		if !strings.Contains(args, "--ordinal-domain st.test --ordinal-initial 3") || strings.Contains(args, "--node-id") || strings.Contains(args, "--peers") {
			t.Errorf("%s args %q", s.Name, args)
		}
		if !strings.Contains(string(hosts), host+" "+OrdinalName(i+1, "st.test")+"\n") {
			t.Errorf("hosts file %q lacks %s", hosts, s.Name)
		}
	}
	for _, p := range c.All() {
		if !slices.Contains(p.Env, faults.HostsEnv+"="+hostsFile(dir)) {
			t.Errorf("%s cannot resolve the members' names: env %q", p.Name, p.Env)
		}
	}
	// Re-joined through another member, it is told its identity again.
	s := c.Stores[1]
	s.Join = c.Stores[0].HTTPAddr
	if args := strings.Join(s.Args(), " "); strings.Contains(args, "--ordinal-domain") || !strings.Contains(args, "--node-id store-1") {
		t.Errorf("joining: args %q", args)
	}
}
