//go:build faults

package main

import "os"

// HostnameEnv replaces the hostname the StatefulSet mode derives the
// member's identity from, in faults builds only: the fault harness runs
// every member of an ordinal-mode cluster on one machine, and each must
// believe it is its own pod (NAME-ORDINAL).
const HostnameEnv = "SEQSVR_FAULTS_HOSTNAME"

func init() { hostnameFromEnv() }

func hostnameFromEnv() {
	if h := os.Getenv(HostnameEnv); h != "" {
		hostname = func() (string, error) { return h, nil }
	}
}
