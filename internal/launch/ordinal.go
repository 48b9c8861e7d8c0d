package launch

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/seqsvr/seqsvr/internal/faults"
)

// OrdinalHostnameEnv is the faults build's replacement for the hostname
// the storesvr's StatefulSet mode reads (cmd/storesvr).
const OrdinalHostnameEnv = "SEQSVR_FAULTS_HOSTNAME"

// OrdinalNodeID is store i's (1-based) node ID in the StatefulSet mode:
// its pod name, NAME-ORDINAL.
func OrdinalNodeID(i int) string { return fmt.Sprintf("store-%d", i-1) }

// OrdinalName is store i's DNS name under domain, as the headless Service
// would resolve it.
func OrdinalName(i int, domain string) string {
	return OrdinalNodeID(i) + "." + strings.Trim(domain, ".")
}

// OrdinalHost is store i's own address in the StatefulSet mode without
// namespaces: every member listens on the same ports, as pods do, so each
// needs an address of its own; all of 127.0.0.0/8 is loopback.
func OrdinalHost(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }

// hostsFile is where the StatefulSet mode's names are written for the
// processes to resolve (faults.HostsEnv).
func hostsFile(dir string) string { return filepath.Join(dir, "hosts") }

// writeOrdinalHosts writes every store's name and address.
func writeOrdinalHosts(dir, domain string, stores []*Proc) error {
	var b strings.Builder
	for i, s := range stores {
		host, _, err := net.SplitHostPort(s.HTTPAddr)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s\n", host, OrdinalName(i+1, domain))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(hostsFile(dir), []byte(b.String()), 0o644)
}

// ordinalEnv is what every process of an ordinal-mode cluster needs: the
// names of the stores (allocsvrs and forwarding members dial the leader
// by the address in the configuration).
func ordinalEnv(dir string) string { return faults.HostsEnv + "=" + hostsFile(dir) }
