package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSecurityFlagsGoTogether(t *testing.T) {
	base := []string{"--node-id", "s1", "--data-dir", "d"}
	none := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		bad  string // "" when accepted
	}{
		{[]string{"--raft-tls-cert", "c", "--raft-tls-key", "k"}, "--raft-tls-ca"},
		{[]string{"--raft-tls-cert", "c", "--raft-tls-key", "k", "--raft-tls-ca", "ca"}, ""},
		{[]string{"--tls-cert", "c"}, "--tls-key"},
		{[]string{"--tls-client-ca", "ca"}, "--tls-client-ca needs --tls-cert"},
		{[]string{"--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca", "--auth-file", "a"}, ""},
	} {
		var out bytes.Buffer
		_, err := parseConfig(append(append([]string{}, base...), c.args...), none, &out)
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		}
	}
}
