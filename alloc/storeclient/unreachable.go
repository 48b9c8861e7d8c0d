package storeclient

import (
	"errors"
	"net"
	"time"
)

// A leader names its own address (--advertise-http-addr, or the DNS
// name of a StatefulSet pod), which a client outside the cluster's network
// may not be able to resolve or reach, while the members in its --store
// list are (a port-forward, a Service, a host port). So a leader address
// the client could not connect to is passed over for unreachableFor: the
// calls go to the listed members in turn meanwhile, and a follower
// forwards to the leader. The leader is tried again afterwards, since a
// refused connection is also what a leader that is restarting answers.
const unreachableFor = 5 * time.Second

// cannotConnect reports whether err is a failure to open a connection at
// all (no such host, connection refused, no route), as opposed to one
// that failed after the request was sent.
func cannotConnect(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
