package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// runStatefulSet runs the storesvr StatefulSet's container as the
// manifest writes it, in podman: each pod's hostname storesvr-N and the
// headless Service's DNS name storesvr-N.storesvr.seqsvr.svc.cluster.local
// (a network alias), the manifest's args without the Secret files (no
// auth, plain HTTP, plain Raft: podman has no Secrets here). The replicas
// bootstrap one cluster from --ordinal-domain alone; a member that loses
// its volume comes back into it (loseDisk); a scale-up pod (ordinal =
// replicas) joins it through ordinal 0. Every pod's API is published on
// the host, and SEQSVR_FAULTS_BUGS, where the test's environment sets it,
// reaches every pod (a -tags faults image plants those bugs; others ignore
// it).
func runStatefulSet(t *testing.T, e *engine, image string) {
	m := readManifests(t)
	ss := m.sets[0]
	c := ss.Spec.Template.Spec.Containers[0]
	domain := flagValue(c.Args, "ordinal-domain")
	var args []string
	for _, a := range c.Args {
		if strings.Contains(a, "=/etc/seqsvr/") {
			continue // a Secret's file
		}
		args = append(args, a)
	}
	prefix := fmt.Sprintf("seqsvr-sts-%d", os.Getpid())
	createNetwork(t, e, prefix)
	pods := &ssPods{t: t, e: e, name: ss.Name, names: map[int]string{}, urls: map[int]string{}}
	t.Cleanup(func() {
		var started []string
		for ord := range len(pods.names) {
			started = append(started, pods.names[ord])
		}
		if t.Failed() {
			for ord := range len(pods.names) {
				l := strings.Split(strings.TrimSpace(pods.logs(ord)), "\n")
				t.Logf("---- %s ----\n%s", pods.names[ord], strings.Join(l[max(0, len(l)-30):], "\n"))
			}
		}
		if len(started) > 0 {
			e.cmd(2*time.Minute, append([]string{"rm", "-f", "-v", "-t", "2"}, started...)...)
		}
	})
	httpPort := listenPort(t, flagValue(c.Args, "http-addr"))
	pods.start = func(ord int) {
		host := fmt.Sprintf("%s-%d", ss.Name, ord)
		addr := freeAddr(t)
		run := append([]string{"run", "-d", "--name", prefix + "-" + host, "--network", prefix,
			"--hostname", host, "--network-alias", host + "." + domain,
			"-p", fmt.Sprintf("%s:%d", addr, httpPort), "-e", "SEQSVR_FAULTS_BUGS"}, e.run...)
		run = append(append(append(run, image), c.Command...), args...)
		e.must(time.Minute, run...)
		pods.names[ord], pods.urls[ord] = prefix+"-"+host, "http://"+addr
	}
	start := pods.start
	replicas := int(*ss.Spec.Replicas)
	for ord := range replicas {
		start(ord)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitMembers := func(n int) {
		t.Helper()
		var st struct {
			LeaderID string `json:"leaderId"`
			Members  []struct {
				ID, RaftAddr, HTTPAddr string
			}
		}
		for {
			st.LeaderID, st.Members = "", nil
			postOK(ctx, t, pods.urls[0]+"/seqsvr.v1.StoreService/ClusterStatus", `{}`, &st)
			if st.LeaderID != "" && len(st.Members) == n {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("ClusterStatus %+v, want %d members and a leader", st, n)
			case <-time.After(200 * time.Millisecond):
			}
		}
		for _, mb := range st.Members {
			if mb.RaftAddr != fmt.Sprintf("%s.%s:7001", mb.ID, domain) {
				t.Errorf("member %s at Raft address %q, want its DNS name", mb.ID, mb.RaftAddr)
			}
		}
	}
	waitMembers(replicas)
	postOK(ctx, t, pods.urls[0]+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"sts"}`, nil)
	var seg struct{ First, Last string }
	postOK(ctx, t, pods.urls[0]+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"sts","size":"10"}`, &seg)
	if seg.First != "1" || seg.Last != "10" {
		t.Fatalf("ReserveSegment: %+v", seg)
	}
	pods.loseDisk(ctx, "sts")
	waitMembers(replicas)
	// A scale-up: the next ordinal joins through ordinal 0.
	start(replicas)
	waitMembers(replicas + 1)
	b, _ := json.Marshal(seg)
	t.Logf("StatefulSet from %s: %d pods bootstrapped from --ordinal-domain, one came back on an empty volume, a scale-up pod joined, segment %s", image, replicas, b)
}
