package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ordinal derives a StatefulSet member's identity from its hostname, so a
// Kubernetes manifest passes the same flags to every pod and no shell
// script computes them. A pod of StatefulSet NAME is named NAME-ORDINAL and
// resolves as NAME-ORDINAL.DOMAIN through the headless Service (DOMAIN is
// SERVICE.NAMESPACE.svc.cluster.local). With --ordinal-domain set:
//
//   - --node-id is the hostname (NAME-ORDINAL): stable across restarts and
//     rescheduling, as the data dir's recorded owner requires;
//   - --raft-addr and --http-addr are NAME-ORDINAL.DOMAIN with the ports of
//     the flags given: a DNS name, not the pod IP, so the stored Raft
//     configuration stays right when a pod comes back with a new IP;
//   - ordinals below --ordinal-initial are the initial members: each gets
//     the same --peers list of all of them, so they bootstrap one cluster
//     in any start order (podManagementPolicy: Parallel);
//   - a higher ordinal (a scale-up) joins through NAME-0.
//
// On a restart the stored state wins, as for hand-written flags: --peers
// and --join are then ignored by the store.
type ordinal struct {
	Domain  string
	Initial int
}

// hostname is the pod's hostname; tests replace it.
var hostname = os.Hostname

func (o *ordinal) register(fs *flag.FlagSet) {
	fs.StringVar(&o.Domain, "ordinal-domain", "", "Kubernetes StatefulSet mode: derive --node-id (the hostname NAME-ORDINAL), --raft-addr and --http-addr\n(NAME-ORDINAL.DOMAIN with the ports of those flags) and --peers or --join from the hostname;\nDOMAIN is the headless Service's, e.g. storesvr.seqsvr.svc.cluster.local")
	fs.IntVar(&o.Initial, "ordinal-initial", 3, "with --ordinal-domain: ordinals 0..N-1 bootstrap the cluster with one --peers list; higher ordinals --join NAME-0")
}

// apply fills c's identity flags from the hostname when --ordinal-domain is
// set, and returns the problems (none when it is unset).
func (o *ordinal) apply(c *config) []error {
	if o.Domain == "" {
		return nil
	}
	var errs []error
	for _, set := range []struct {
		name string
		on   bool
	}{{"--node-id", c.NodeID != ""}, {"--peers", c.Peers != ""}, {"--join", c.Join != ""}, {"--bootstrap", c.Bootstrap}} {
		if set.on {
			errs = append(errs, fmt.Errorf("--ordinal-domain derives --node-id, --peers and --join from the hostname: %s must not be set with it", set.name))
		}
	}
	if o.Initial < 1 {
		errs = append(errs, fmt.Errorf("--ordinal-initial must be at least 1, got %d", o.Initial))
	}
	if strings.Trim(o.Domain, ".") == "" || strings.ContainsAny(o.Domain, ":/@,= ") {
		errs = append(errs, fmt.Errorf("--ordinal-domain %q is not a DNS domain", o.Domain))
	}
	raftPort, err := port("--raft-addr", c.RaftAddr)
	errs = appendErr(errs, err)
	httpPort, err := port("--http-addr", c.HTTPAddr)
	errs = appendErr(errs, err)
	host, err := hostname()
	if err != nil {
		errs = append(errs, fmt.Errorf("--ordinal-domain: hostname: %w", err))
	}
	// The pod's hostname is the bare pod name; a FQDN keeps it as the first label.
	host, _, _ = strings.Cut(host, ".")
	name, ord, err := splitOrdinal(host)
	errs = appendErr(errs, err)
	if len(errs) > 0 {
		return errs
	}
	domain := strings.Trim(o.Domain, ".")
	fqdn := func(i int) string { return fmt.Sprintf("%s-%d.%s", name, i, domain) }
	c.NodeID = host
	c.RaftAddr = net.JoinHostPort(fqdn(ord), raftPort)
	c.HTTPAddr = net.JoinHostPort(fqdn(ord), httpPort)
	if ord >= o.Initial {
		c.Join = net.JoinHostPort(fqdn(0), httpPort)
		return nil
	}
	peers := make([]string, o.Initial)
	for i := range peers {
		peers[i] = fmt.Sprintf("%s-%d=%s@%s", name, i, net.JoinHostPort(fqdn(i), raftPort), net.JoinHostPort(fqdn(i), httpPort))
	}
	c.Peers = strings.Join(peers, ",")
	return nil
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

// port is the port of a HOST:PORT flag value; only it is kept in the
// StatefulSet mode.
func port(flagName, addr string) (string, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--ordinal-domain takes the port of %s: %w", flagName, err)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--ordinal-domain takes the port of %s, and %q has none", flagName, addr)
	}
	return p, nil
}

// errNoOrdinal: the hostname does not end in -ORDINAL.
var errNoOrdinal = errors.New("--ordinal-domain needs a StatefulSet pod's hostname NAME-ORDINAL")

// splitOrdinal splits NAME-ORDINAL at its last '-'.
func splitOrdinal(host string) (string, int, error) {
	i := strings.LastIndexByte(host, '-')
	if i < 1 {
		return "", 0, fmt.Errorf("%w, got %q", errNoOrdinal, host)
	}
	digits := host[i+1:]
	n, err := strconv.Atoi(digits)
	// Reject "+1", "-0"-style and zero-padded forms: the ordinal must print
	// back as the same name, or two spellings would be two members.
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return "", 0, fmt.Errorf("%w, got %q", errNoOrdinal, host)
	}
	return host[:i], n, nil
}
