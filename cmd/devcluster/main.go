// Command devcluster is `make run`: a local seqsvr on loopback in the
// foreground — three storesvr members and one allocsvr on fixed ports,
// data under -dir — with a demo tag and ready-to-paste curl lines.
// Ctrl-C stops every process (SIGTERM, then SIGKILL after 10 s); if
// devcluster itself dies, the kernel kills its children (see internal/launch).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "bin", "directory holding storesvr and allocsvr (built if missing)")
	dir := flag.String("dir", "run", "data and logs directory (kept across runs)")
	stores := flag.Int("stores", 3, "storesvr members")
	allocs := flag.Int("allocs", 1, "allocsvr processes")
	storeHTTP := flag.Int("store-http-base", 8080, "store i listens on HTTP port base+i")
	storeRaft := flag.Int("store-raft-base", 7000, "store i listens on Raft port base+i")
	allocHTTP := flag.Int("alloc-http-base", 8080, "alloc i listens on HTTP port base+i-1")
	tag := flag.String("tag", "order", "demo tag created at start")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version.Line("devcluster"))
		return nil
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	logf := func(format string, args ...any) { fmt.Printf("devcluster: "+format+"\n", args...) }
	c, err := launch.New(launch.Options{
		BinDir: *bin, Dir: *dir, Stores: *stores, Allocs: *allocs, Logf: logf,
		StoreHTTPBase: *storeHTTP, StoreRaftBase: *storeRaft, AllocHTTPBase: *allocHTTP,
	})
	if err != nil {
		return err
	}
	if err := checkPorts(procRoot, clusterAddrs(c)); err != nil {
		return err
	}
	if err := ensureBinaries(ctx, *bin); err != nil {
		return err
	}
	fmt.Printf("devcluster: starting %d storesvr + %d allocsvr, data and logs under %s/\n", *stores, *allocs, *dir)
	defer stopAll(c)
	if err := c.Launch(ctx); err != nil {
		return err
	}
	if _, err := c.Leader(ctx); err != nil {
		return err
	}
	// The readiness answers must have come from these processes, not from
	// another cluster that took a port between the check and the start.
	if err := checkOwn(procRoot, c); err != nil {
		return err
	}
	if err := createTag(ctx, c, *tag); err != nil {
		return err
	}
	printHelp(c, *tag, *dir)

	// Report a process that dies on its own; the rest keep running, as a
	// real deployment would.
	go watch(ctx, c, logf)
	<-ctx.Done()
	fmt.Println("\ndevcluster: stopping all processes")
	return nil
}

// procRoot is where portHolders reads the socket tables and processes.
const procRoot = "/proc"

func ensureBinaries(ctx context.Context, bin string) error {
	for _, b := range []string{"storesvr", "allocsvr"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			fmt.Printf("devcluster: %s missing in %s, building\n", b, bin)
			return launch.Build(ctx, bin)
		}
	}
	return nil
}

func createTag(ctx context.Context, c *launch.Cluster, tag string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: 1000, Description: "demo tag created by make run"}); err != nil {
		return fmt.Errorf("demo tag: %w", err)
	}
	return nil
}

func printHelp(c *launch.Cluster, tag, dir string) {
	a := c.Allocs[0].URL()
	s := c.Stores[0].URL()
	fmt.Printf(`
seqsvr is up.
  storesvr: %v
  allocsvr: %v
  logs:     %s/logs/

Segment IDs over Connect JSON:
  curl -s -X POST -H 'Content-Type: application/json' -d '{"tag":"%[4]s"}' %[5]s/seqsvr.v1.AllocService/NextIDs
  curl -s -X POST -H 'Content-Type: application/json' -d '{"tag":"%[4]s","count":5}' %[5]s/seqsvr.v1.AllocService/NextIDs
Snowflake IDs and decoding:
  curl -s -X POST -H 'Content-Type: application/json' -d '{"count":3}' %[5]s/seqsvr.v1.AllocService/NextSnowflakeIDs
  curl -s -X POST -H 'Content-Type: application/json' -d '{"id":"ID"}' %[5]s/seqsvr.v1.AllocService/DecodeSnowflake
Leaf-compatible HTTP API (plain number):
  curl -s %[5]s/api/segment/get/%[4]s
  curl -s %[5]s/api/snowflake/get/%[4]s
Buffers and worker (Leaf's cache page):
  curl -s -X POST -H 'Content-Type: application/json' -d '{}' %[5]s/seqsvr.v1.AllocService/Status
The store (any member; writes to a follower are forwarded):
  curl -s -X POST -H 'Content-Type: application/json' -d '{"tag":"user","step":100}' %[6]s/seqsvr.v1.StoreService/CreateTag
  curl -s -X POST -H 'Content-Type: application/json' -d '{"tag":"user","size":10}' %[6]s/seqsvr.v1.StoreService/ReserveSegment
  curl -s -X POST -H 'Content-Type: application/json' -d '{}' %[6]s/seqsvr.v1.StoreService/ClusterStatus
  curl -s %[6]s/metrics | grep ^raft_

Ctrl-C stops everything.
`, c.StoreURLs(), urls(c.Allocs), dir, tag, a, s)
}

func urls(ps []*launch.Proc) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.URL()
	}
	return out
}

func watch(ctx context.Context, c *launch.Cluster, logf func(string, ...any)) {
	reported := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		for _, p := range c.All() {
			if !p.Running() && !reported[p.Name] {
				reported[p.Name] = true
				logf("%s exited (%v); see %s", p.Name, p.ExitErr(), p.LogPath)
			}
		}
	}
}

// stopAll stops allocsvrs first (they depend on the store), each with
// SIGTERM so logs end cleanly and data is flushed.
func stopAll(c *launch.Cluster) {
	var errs []error
	for _, group := range [][]*launch.Proc{c.Allocs, c.Stores} {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range group {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	c.Close()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
	}
}
