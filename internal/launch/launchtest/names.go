package launchtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// NameFlood is what FloodNames sends to one process: requests that each
// carry a name of the caller's own making.
type NameFlood struct {
	// Base is the process's URL; Pid its process, for its memory.
	Base string
	Pid  int
	// Token, when set, is sent with the requests of Named (a valid
	// token, so the names reach the component behind the gate).
	Token string
	// Named makes the i-th request naming a thing that does not exist
	// (a tag, a space), given a name unique to i; FloodNames sends each
	// without a token and, when Token is set, with it.
	Named []func(name string) *http.Request
}

// The flood's size: FloodPaths distinct unknown paths of PathBytes each
// (a new series per path would hold them all), FloodNames distinct names
// per token setting.
const (
	FloodPaths  = 10_000
	FloodNamesN = 10_000
	PathBytes   = 8 << 10
	// RSSBound is how much a process's resident memory may grow over the
	// flood: the GC's headroom and connection buffers, far below the
	// hundreds of MB that one series per path would take.
	RSSBound   = 48 << 20
	checkEvery = 2_000
	// seriesSlack allows for the few series a process adds by itself
	// meanwhile (a raft timer's first event); one series per name would
	// add checkEvery.
	seriesSlack = 50
)

// FloodNames checks that no name a caller sends, without a token and
// with one, grows the process: it sends FloodPaths distinct unknown paths
// shaped like procedures (refused by the auth gate, no token) and
// FloodNamesN requests of f.Named, and every checkEvery requests compares
// the series /metrics shows (with ScraperToken: all of them) and the
// process's VmRSS with what they were after a warm-up.
func FloodNames(t *testing.T, f NameFlood) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}
	pad := strings.Repeat("x", PathBytes)
	path := func(i int) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/evil%d.Service/%s%d", f.Base, i, pad, i), strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	named := func(i int, token string) *http.Request {
		req := f.Named[i%len(f.Named)](fmt.Sprintf("ghost-%d-%d", len(token), i))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return req
	}
	type wave struct {
		what string
		n    int
		req  func(i int) *http.Request
	}
	waves := []wave{{"unknown paths", FloodPaths, path}}
	if len(f.Named) > 0 {
		waves = append(waves, wave{"unknown names without a token", FloodNamesN, func(i int) *http.Request { return named(i, "") }})
		if f.Token != "" {
			waves = append(waves, wave{"unknown names with a token", FloodNamesN, func(i int) *http.Request { return named(i, f.Token) }})
		}
	}
	// Warm-up: every kind of answer once, so the series each makes (the
	// "unknown" procedure, a not_found code) exist before the baseline.
	for _, w := range waves {
		send(t, hc, w.req, 0, 10*max(len(f.Named), 1))
	}
	series0, rss0 := seriesOf(t, hc, f.Base), rss(t, f.Pid)
	t.Logf("%s: %d series, VmRSS %d MB after the warm-up", f.Base, len(series0), rss0>>20)
	for _, w := range waves {
		for from := 0; from < w.n; from += checkEvery {
			send(t, hc, w.req, 1000+from, 1000+min(from+checkEvery, w.n))
			series, r := seriesOf(t, hc, f.Base), rss(t, f.Pid)
			if added := newSeries(series0, series); len(added) > seriesSlack || r-rss0 > RSSBound {
				t.Fatalf("after %d %s: %d series (%d before, new ones like %.200q), VmRSS %d MB (%d MB before, bound +%d MB)",
					from+checkEvery, w.what, len(series), len(series0), added, r>>20, rss0>>20, RSSBound>>20)
			}
		}
		t.Logf("%s: %d %s: series flat, VmRSS %d MB", f.Base, w.n, w.what, rss(t, f.Pid)>>20)
	}
}

// send sends requests from to to-1 of req, 8 at a time, and drains their
// answers; any answer will do, as long as there is one.
func send(t *testing.T, hc *http.Client, req func(i int) *http.Request, from, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res, err := hc.Do(req(i).WithContext(ctx))
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("flood: %v", firstErr)
	}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// seriesOf is the set of series /metrics shows with ScraperToken (a
// sample line's name and labels), read as a stream.
func seriesOf(t *testing.T, hc *http.Client, base string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+ScraperToken)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	out := map[string]bool{}
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		l := lines.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.LastIndexByte(l, ' '); i > 0 {
			l = l[:i]
		}
		out[l] = true
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// newSeries lists the series of after that before lacks.
func newSeries(before, after map[string]bool) []string {
	var out []string
	for s := range after {
		if !before[s] {
			out = append(out, s)
		}
	}
	return out
}

// PostJSON is a Connect unary call of procedure with a JSON body, for
// NameFlood.Named.
func PostJSON(base, procedure, body string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+procedure, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Get is a GET of base+path, for NameFlood.Named.
func Get(base, path string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	return req
}
