package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// errPortBusy: a port the cluster needs is taken, most often by another
// `make run`. Starting anyway would leave processes dying on "address
// already in use" while the other cluster answers the readiness checks.
var errPortBusy = errors.New("port in use")

// clusterAddrs are every address the cluster's processes listen on.
func clusterAddrs(c *launch.Cluster) []string {
	var addrs []string
	for _, p := range c.All() {
		addrs = append(addrs, p.HTTPAddr)
		if p.RaftAddr != "" {
			addrs = append(addrs, p.RaftAddr)
		}
	}
	return addrs
}

// checkPorts listens on each address and lets go at once; one that
// cannot be listened on fails, naming the port and, where the system can
// tell, the process holding it.
func checkPorts(procRoot string, addrs []string) error {
	var busy []string
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err == nil {
			l.Close()
			continue
		}
		_, portStr, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(portStr)
		msg := fmt.Sprintf("%s (%v)", a, err)
		if hs := portHolders(procRoot, port); len(hs) > 0 {
			names := make([]string, len(hs))
			for i, h := range hs {
				names[i] = h.String()
			}
			msg = fmt.Sprintf("%s, held by %s", a, strings.Join(names, ", "))
		}
		busy = append(busy, msg)
	}
	if len(busy) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; is another `make run` running? stop it, or pick other ports (-store-http-base, -store-raft-base, -alloc-http-base)",
		errPortBusy, strings.Join(busy, "; "))
}

// checkOwn fails unless each of the cluster's processes is running and is
// the one listening on its HTTP port, so that a readiness answer came
// from this cluster and not from another one on the same ports.
func checkOwn(procRoot string, c *launch.Cluster) error {
	for _, p := range c.All() {
		if !p.Running() {
			return fmt.Errorf("%s exited (%v); see %s", p.Name, p.ExitErr(), p.LogPath)
		}
		_, portStr, _ := net.SplitHostPort(p.HTTPAddr)
		port, _ := strconv.Atoi(portStr)
		hs := portHolders(procRoot, port)
		if len(hs) == 0 {
			continue // the system cannot tell; Running is all there is
		}
		own := false
		for _, h := range hs {
			own = own || h.Pid == p.Pid()
		}
		if !own {
			return fmt.Errorf("%w: %s (pid %d) is not the process listening on %s: %v; see %s", errPortBusy, p.Name, p.Pid(), p.HTTPAddr, hs, p.LogPath)
		}
	}
	return nil
}
