package storage

import (
	"context"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// TestOnBackupAndWorkerIDs: Config.OnBackup hears of every whole backup a
// member answers, taken as the leader or relayed as a follower (the last
// backup's time is a metric); WorkerIDs counts a registered worker.
func TestOnBackupAndWorkerIDs(t *testing.T) {
	var mu sync.Mutex
	answered := map[string]int{}
	c := newTestCluster(t, 3, func(cfg *Config) {
		id := cfg.NodeID
		cfg.OnBackup = func(at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if !at.IsZero() {
				answered[id]++
			}
		}
	})
	leader := c.waitForLeader()
	follower := c.followers(leader)[0]
	count := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		return answered[id]
	}
	fetchBackup(t, leader.client())
	if count(leader.id) != 1 || count(follower.id) != 0 {
		t.Fatalf("after a backup from the leader: %v", answered)
	}
	fetchBackup(t, follower.client())
	if count(follower.id) != 1 {
		t.Fatalf("after a backup relayed by %s: %v", follower.id, answered)
	}

	if in, limit := leader.store.WorkerIDs(); in != 0 || limit != 1024 {
		t.Fatalf("no worker: %d of %d in use", in, limit)
	}
	_, err := leader.client().RegisterWorker(context.Background(), connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NodeId: "a1", InstanceId: "i1", NowMs: time.Now().UnixMilli()}))
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := leader.store.WorkerIDs(); in != 1 {
		t.Fatalf("one worker registered: %d in use", in)
	}
}
