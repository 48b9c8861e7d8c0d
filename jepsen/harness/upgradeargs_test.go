package harness

import (
	"slices"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// The base release knows neither --store-cert nor --store-key and calls
// the stores with its serving certificate: it gets the members' one.
func TestBaseAllocArgs(t *testing.T) {
	sec := &launch.Security{CertFile: "node.pem", KeyFile: "node-key.pem", AllocServeCertFile: "alloc.pem", AllocServeKeyFile: "alloc-key.pem"}
	args := []string{"--auth-file", "auth.json", "--tls-cert", "alloc.pem", "--tls-key", "alloc-key.pem",
		"--store-cert", "alloc-client.pem", "--store-key", "alloc-client-key.pem", "--store-ca", "ca.pem", "--seq-space", "seq"}
	want := []string{"--auth-file", "auth.json", "--tls-cert", "node.pem", "--tls-key", "node-key.pem", "--store-ca", "ca.pem", "--seq-space", "seq"}
	if got := baseAllocArgs(args, sec); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := baseAllocArgs(args, nil); !slices.Equal(got, args) {
		t.Fatalf("plain mode changed %q", got)
	}
}
