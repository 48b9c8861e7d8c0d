package deploy

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// runStatefulSetRecover runs docs/deploy.md's Kubernetes scale-down and
// quorum-loss runbooks on the StatefulSet's pods through the runbook
// interpreter (runbook_test.go): a 5-pod cluster (the test's setup: the
// StatefulSet as installed, then scaled up) scales down to 3 as the
// runbook says (seqctl member remove, replicas lowered, the PVCs
// deleted); then, as the quorum-loss block says, two pods and their PVCs
// are lost for good, storesvr-0 recovers alone, restarts without
// --recover, the other ordinals join it and the manifest is applied
// back. The tag continues above what was reserved before.
func runStatefulSetRecover(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	doc, err := readDeployDoc()
	if err != nil {
		t.Fatal(err)
	}
	p := newSTSPods(t, e, image, fmt.Sprintf("seqsvr-rc-%d", os.Getpid()))
	rb := newRunbook(t, ctx, p, t.TempDir())
	rb.scaleTo(3) // as installed
	p.waitMembers(ctx, 3)
	rb.scaleTo(5) // ordinals 3 and 4 join through ordinal 0
	oldID := p.waitMembers(ctx, 5)

	rb.runBlock(doc, "seqctl from outside the cluster")
	rb.runBlock(doc, "Scale down")
	if id := p.waitMembers(ctx, 3); id != oldID {
		t.Fatalf("after the scale-down the cluster ID is %s, want %s", id, oldID)
	}
	for ord := 3; ord < 5; ord++ {
		if rb.pvcs[p.pvcVolume(ord, "data")] {
			t.Fatalf("the scale-down leaves the PVC of %s-%d", p.name, ord)
		}
	}
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"rc"}`, nil)
	var seg struct{ First, Last string }
	postOK(ctx, t, p.url0+"/seqsvr.v1.StoreService/ReserveSegment", `{"tag":"rc","size":"10"}`, &seg)

	rb.seen = nil
	rb.runBlock(doc, "Quorum loss")
	newID := rb.newCluster(oldID, "recovered")
	first := continueAbove(ctx, t, p, "rc", seg.Last, "recovered")
	rb.asManifest()
	t.Logf("scale-down 5 to 3, then quorum loss: cluster %s recovered as %s on storesvr-0, 2 pods joined it; tag rc continues at %s (before: up to %s)", oldID, newID, first, seg.Last)
}
