package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// runStatefulSetRecover runs docs/deploy.md's Kubernetes quorum-loss
// and scale-down runbooks on the StatefulSet's pods: a 4-pod cluster
// scales down to 3 (seqctl member remove, the pod stopped, its PVC
// deleted); then two pods and their PVCs are lost for good, storesvr-0
// recovers alone (--recover, --recover-lost and --ordinal-initial=1
// patched in), restarts without --recover, and the other ordinals, with
// empty PVCs, join it. The tag continues above what was reserved.
func runStatefulSetRecover(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := newSTSPods(t, e, image, fmt.Sprintf("seqsvr-rc-%d", os.Getpid()))
	for ord := range 3 {
		p.start(ord, nil)
	}
	p.waitMembers(ctx, 3)
	p.start(3, nil) // a scale-up: ordinal 3 joins through ordinal 0
	oldID := p.waitMembers(ctx, 4)

	// Scale down to 3: remove the member first, then the pod and its PVC.
	seqctl := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "seqctl"), args...)
		cmd.Env = append(os.Environ(), "SEQCTL_STORE="+p.url0)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("seqctl %v: %v\n%s", args, err, out)
		}
	}
	seqctl("member", "remove", p.name+"-3")
	p.stop(3)
	p.deletePVC(3)
	if id := p.waitMembers(ctx, 3); id != oldID {
		t.Fatalf("after the scale-down the cluster ID is %s, want %s", id, oldID)
	}
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"rc"}`, nil)
	var seg struct{ First, Last string }
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"rc","size":"10"}`, &seg)

	// Quorum loss: ordinals 1 and 2 gone for good with their PVCs.
	for ord := range 3 {
		p.stop(ord)
	}
	p.deletePVC(1)
	p.deletePVC(2)
	patch := []string{"--ordinal-initial=1"}
	p.start(0, append([]string{"--recover", fmt.Sprintf("--recover-lost=%s-1,%s-2", p.name, p.name)}, patch...))
	newID := p.waitMembers(ctx, 1)
	if newID == oldID {
		t.Fatalf("the recovered cluster kept the cluster ID %s", oldID)
	}
	first := p.rejoinAndContinue(ctx, patch, newID, "recovered", "rc", seg.Last)
	t.Logf("scale-down 4 to 3, then quorum loss: cluster %s recovered as %s on storesvr-0, 2 pods joined it; tag rc continues at %s (before: up to %s)", oldID, newID, first, seg.Last)
}
