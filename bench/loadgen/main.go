// Command loadgen drives one target with a fixed number of concurrent
// workers for a fixed time and prints one JSON line with throughput and
// HdrHistogram latency percentiles. It is a separate process so the
// benchmarks measure a server, not a goroutine sharing its scheduler.
//
//	loadgen -target alloc-connect -url http://127.0.0.1:8080 -tag bench -count 1 -c 64 -d 5s
//	loadgen -target alloc-raw -url http://127.0.0.1:8080 -tag bench -count 1 -c 64 -d 5s
//	loadgen -target seq-raw -url http://127.0.0.1:8080 -tag space -keys 1000000 -c 64 -d 5s
//	loadgen -target http-raw -url http://127.0.0.1:9000/id -c 64 -d 5s
//	loadgen -target alloc-raw -url https://127.0.0.1:8443 -tls-ca ca.pem -token TOKEN -tag bench -c 64 -d 5s
//	loadgen -target redis -addr 127.0.0.1:6379 -c 64 -d 5s   (-count N > 1: INCRBY N)
//	loadgen ... -timeline 100ms -hist   (a per-100 ms timeline and the whole histogram in the JSON)
//	loadgen -serve 127.0.0.1:9000   (the bare net/http reference handler)
//	loadgen -serve-front 127.0.0.1:9001   (the same handler on the HTTP/1.1 front)
//
// Targets named *-raw use a hand-written HTTP/1.1 client (one kept-alive
// connection per worker, request bytes built once, response parsed by
// hand), the same shape as the RESP client of the redis target, so the
// generator's own cost is alike for every target it compares. The Go-client
// targets (net/http, connect-go) are kept to show what a typical client sees.
// Only responses that parse and carry the asked number of IDs count.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/seqsvr/seqsvr/bench/loadgen/drive"
	"github.com/seqsvr/seqsvr/bench/loadgen/result"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// Result is what one run prints.
type Result = result.Result

// doer performs one operation and returns how many IDs it got.
type doer = drive.Doer

func main() {
	var (
		target = flag.String("target", "", "Go clients: alloc-connect | alloc-grpc | store-reserve | http; raw HTTP/1.1: alloc-raw | alloc-json-raw | leaf-raw | store-raw | seq-raw | http-raw; redis")
		url    = flag.String("url", "", "base URL (alloc-*, store-reserve) or full URL (http)")
		addr   = flag.String("addr", "127.0.0.1:6379", "redis address")
		tag    = flag.String("tag", "bench", "tag for alloc and store targets; space for seq-raw")
		keys   = flag.Uint64("keys", 0, "seq-raw: NextSeq over keys spread across 0..keys-1 (each worker cycles through 64 of them)")
		count  = flag.Int("count", 1, "IDs per NextIDs call; segment size for store-reserve")
		conc   = flag.Int("c", 16, "concurrent workers")
		dur    = flag.Duration("d", 5*time.Second, "duration of the measured run")
		warm   = flag.Duration("warmup", 500*time.Millisecond, "unmeasured warm-up")
		serve  = flag.String("serve", "", "serve the bare net/http reference handler on this address instead")
		front  = flag.String("serve-front", "", "serve the bare handler behind the services' HTTP/1.1 front (package h1) on this address instead")
		token  = flag.String("token", "", "raw targets: send Authorization: Bearer TOKEN with every request")
		caFile = flag.String("tls-ca", "", "raw targets on an https:// URL: trust the server certificates this PEM CA signed")
		insec  = flag.Bool("insecure", false, "raw targets on an https:// URL: do not verify the server certificate")
		tl     = flag.Duration("timeline", 0, "record successes and errors per slice of this length (e.g. 100ms) into the JSON")
		hist   = flag.Bool("hist", false, "put the whole latency histogram into the JSON")
	)
	flag.Parse()
	if *serve != "" {
		log.Fatal(serveBare(*serve, false))
	}
	if *front != "" {
		log.Fatal(serveBare(*front, true))
	}
	sec, err := securityFlags(*token, *caFile, *insec)
	if err == nil {
		var mk func() (doer, error)
		if mk, err = newDoer(*target, *url, *addr, *tag, *count, *conc, *keys, sec); err == nil {
			runAndPrint(mk, *target, *count, drive.Options{Workers: *conc, Warmup: *warm, Duration: *dur, Bucket: *tl, Hist: *hist})
			return
		}
	}
	fmt.Fprintln(os.Stderr, "loadgen:", err)
	os.Exit(2)
}

// securityFlags turns -token, -tls-ca and -insecure into the raw targets'
// options.
func securityFlags(token, caFile string, insecure bool) (rawSecurity, error) {
	sec := rawSecurity{token: token}
	switch {
	case caFile != "" && insecure:
		return sec, errors.New("-tls-ca and -insecure exclude each other")
	case insecure:
		sec.tls = &tls.Config{InsecureSkipVerify: true} // a benchmark flag, off by default
	case caFile != "":
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return sec, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return sec, fmt.Errorf("-tls-ca %s: no PEM certificate", caFile)
		}
		sec.tls = &tls.Config{RootCAs: pool}
	}
	return sec, nil
}

func runAndPrint(mk func() (doer, error), target string, count int, o drive.Options) {
	res, err := drive.Run(mk, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	res.Target, res.Count = target, count
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// serveBare is the floor of the HTTP stack: the same listener setup as the
// services (HTTP/1.1 + h2c) and a handler that does nothing but an atomic
// add. With front, GET /id is answered by the services' HTTP/1.1 front
// (package h1) as their hot routes are, and net/http serves the rest: the
// floor of the stack the services run on.
func serveBare(addr string, front bool) error {
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/id", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(strconv.AppendInt(nil, n.Add(1), 10))
	})
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Addr: addr, Handler: mux, Protocols: &p}
	if !front {
		return srv.ListenAndServe()
	}
	var routes h1.Mux
	routes.Handle("/id", h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		if string(req.Method) != http.MethodGet {
			return false
		}
		resp.SetHeader("Content-Type", "text/plain")
		resp.Body = strconv.AppendInt(resp.Buf[:0], n.Add(1), 10)
		return true
	}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return (&h1.Server{HTTP: srv, Fast: &routes}).Serve(ln)
}
