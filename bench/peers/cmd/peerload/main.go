// Command peerload is bench/loadgen with the peers' own Go clients: the
// same measuring loop (package drive) and the same JSON line, driving
//
//	peerload -target etcd-txn -endpoints 127.0.0.1:2379,... -key /ids/bench -count 1000 -c 64 -d 2s
//	peerload -target mysql-leaf -dsn 'root@tcp(127.0.0.1:3306)/leaf' -tag reserve -c 64 -d 2s
//	peerload -target store-go -urls http://127.0.0.1:7001,... -tag reserve -count 1000 -c 64 -d 2s
//
// etcd-txn reserves a segment of -count IDs by a transaction that compares
// the counter key's mod revision with the last one this worker saw and, if
// equal, raises it by -count; a lost race reads the new value in the same
// transaction's else branch and tries again (Attempts counts every
// transaction). mysql-leaf runs Leaf's statement pair in one transaction
// (package leaf). store-go calls ReserveSegment through the allocsvr's own
// store client (leader discovery, retries), the client a failover is
// measured with. Every call gets -call-timeout.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/bench/loadgen/drive"
	"github.com/seqsvr/seqsvr/bench/peers/leaf"
)

func main() {
	var (
		target    = flag.String("target", "", "etcd-txn | mysql-leaf | store-go")
		endpoints = flag.String("endpoints", "", "etcd-txn: client endpoints, comma-separated")
		key       = flag.String("key", "/seqsvr-bench/counter", "etcd-txn: the counter key")
		dsn       = flag.String("dsn", "", "mysql-leaf: MySQL/MariaDB DSN")
		urls      = flag.String("urls", "", "store-go: store member URLs, comma-separated")
		tag       = flag.String("tag", "bench", "mysql-leaf and store-go: the tag")
		count     = flag.Int("count", 1000, "IDs per reservation (etcd-txn, store-go; mysql-leaf uses the row's step)")
		conc      = flag.Int("c", 16, "concurrent workers")
		dur       = flag.Duration("d", 5*time.Second, "duration of the measured run")
		warm      = flag.Duration("warmup", 500*time.Millisecond, "unmeasured warm-up")
		callTO    = flag.Duration("call-timeout", 5*time.Second, "deadline of one call (with its retries)")
		tl        = flag.Duration("timeline", 0, "record successes and errors per slice of this length")
		hist      = flag.Bool("hist", false, "put the whole latency histogram into the JSON")
		cpuprof   = flag.String("cpuprofile", "", "write this process's CPU profile (the client side) to the file")
	)
	flag.Parse()
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "peerload:", err)
			os.Exit(2)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	var attempts atomic.Int64
	mk, closeFn, err := newDoer(*target, *endpoints, *key, *dsn, *urls, *tag, *count, *conc, *callTO, &attempts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerload:", err)
		os.Exit(2)
	}
	res, err := drive.Run(mk, drive.Options{Workers: *conc, Warmup: *warm, Duration: *dur, Bucket: *tl, Hist: *hist})
	closeFn()
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerload:", err)
		os.Exit(2)
	}
	res.Target, res.Count, res.Attempts = *target, *count, attempts.Load()
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newDoer(target, endpoints, key, dsn, urls, tag string, count, conc int, callTO time.Duration, attempts *atomic.Int64) (func() (drive.Doer, error), func(), error) {
	timed := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, callTO)
	}
	switch target {
	case "etcd-txn":
		eps := split(endpoints)
		if len(eps) == 0 {
			return nil, nil, errors.New("etcd-txn needs -endpoints")
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		// One client shared by every worker: it multiplexes over its gRPC
		// connection, as an application would use it.
		return func() (drive.Doer, error) {
			var rev, val int64 // what this worker last saw of the key
			return func(ctx context.Context) (int, error) {
				ctx, cancel := timed(ctx)
				defer cancel()
				for {
					attempts.Add(1)
					resp, err := cli.Txn(ctx).
						If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
						Then(clientv3.OpPut(key, strconv.FormatInt(val+int64(count), 10))).
						Else(clientv3.OpGet(key)).
						Commit()
					if err != nil {
						return 0, err
					}
					if resp.Succeeded {
						rev, val = resp.Header.Revision, val+int64(count)
						return count, nil
					}
					kvs := resp.Responses[0].GetResponseRange().GetKvs()
					if len(kvs) == 0 {
						rev, val = 0, 0
						continue
					}
					if val, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
						return 0, fmt.Errorf("etcd: counter %q: %w", kvs[0].Value, err)
					}
					rev = kvs[0].ModRevision
				}
			}, nil
		}, func() { _ = cli.Close() }, nil
	case "mysql-leaf":
		if dsn == "" {
			return nil, nil, errors.New("mysql-leaf needs -dsn")
		}
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(conc)
		db.SetMaxIdleConns(conc)
		st := leaf.SQL{DB: db}
		return func() (drive.Doer, error) {
			return func(ctx context.Context) (int, error) {
				ctx, cancel := timed(ctx)
				defer cancel()
				attempts.Add(1)
				a, err := st.Raise(ctx, tag, 0)
				if err != nil {
					return 0, err
				}
				return int(a.Step), nil
			}, nil
		}, func() { _ = db.Close() }, nil
	case "store-go":
		us := split(urls)
		c, err := storeclient.New(us, storeclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return nil, nil, err
		}
		prefix := rand.Text()[:8]
		var n atomic.Int64
		return func() (drive.Doer, error) {
			return func(ctx context.Context) (int, error) {
				ctx, cancel := timed(ctx)
				defer cancel()
				attempts.Add(1)
				id := prefix + "-" + strconv.FormatInt(n.Add(1), 10)
				seg, err := c.ReserveSegment(ctx, tag, int64(count), id)
				if err != nil {
					return 0, err
				}
				if got := seg.GetLast() - seg.GetFirst() + 1; got != int64(count) {
					return 0, fmt.Errorf("segment [%d,%d] does not hold %d ids", seg.GetFirst(), seg.GetLast(), count)
				}
				return count, nil
			}, nil
		}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("unknown -target %q", target)
}
