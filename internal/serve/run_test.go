package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// eachFastHTTP runs f with the HTTP/1.1 front on and off.
func eachFastHTTP(t *testing.T, f func(t *testing.T, fastHTTP bool)) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast-http=%v", fast), func(t *testing.T) { f(t, fast) })
	}
}

// runBackground runs p and returns Run's result channel.
func runBackground(ctx context.Context, p Process) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p) }()
	return done
}

// The port answers while Open runs: /healthz 200, everything else 503;
// then the component's handler.
func TestRunAnswers503UntilOpen(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		addr, release := make(chan string, 1), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := runBackground(ctx, testProcess(fast, func(_ context.Context, env Env) (*App, error) {
			addr <- env.Addr
			<-release
			return &App{Handler: Options{Routes: protoEcho()}}, nil
		}))
		base := "http://" + <-addr
		if code, body, _ := get(t, http.DefaultClient, base+"/healthz"); code != 200 || body != "ok\n" {
			t.Fatalf("/healthz while opening: %d %q", code, body)
		}
		for _, path := range []string{"/readyz", "/proto"} {
			if code, body, _ := get(t, http.DefaultClient, base+path); code != 503 || !strings.Contains(body, "starting") {
				t.Fatalf("%s while opening: %d %q, want 503 starting", path, code, body)
			}
		}
		close(release)
		waitServing(t, base)
		if _, body, _ := get(t, http.DefaultClient, base+"/proto"); body != "HTTP/1.1" {
			t.Fatalf("/proto after open: %q", body)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// On a signal, Handover runs first, while the server still accepts new
// calls; shutdown then lets an in-flight request finish, and only then
// ends the component's context and closes it.
func TestRunDrainsBeforeClose(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		var (
			mu     sync.Mutex
			events []string
		)
		note := func(e string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, e)
		}
		addr, inFlight, finish := make(chan string, 1), make(chan struct{}), make(chan struct{})
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inFlight)
			<-finish
			note("request done")
			_, _ = w.Write([]byte("done"))
		})
		ctx, cancel := context.WithCancel(context.Background())
		var base string
		done := runBackground(ctx, testProcess(fast, func(life context.Context, env Env) (*App, error) {
			addr <- env.Addr
			go func() { <-life.Done(); note("context ended") }()
			return &App{
				Handler: Options{Routes: map[string]http.Handler{"GET /slow": slow}},
				Handover: func() {
					res, err := http.Get(base + "/healthz")
					if err == nil {
						res.Body.Close()
						note(fmt.Sprintf("handover, healthz %d", res.StatusCode))
						return
					}
					note("handover, healthz " + err.Error())
				},
				Close: func() { note("closed") },
			}, nil
		}))
		base = "http://" + <-addr
		waitServing(t, base)
		answer := make(chan string, 1)
		go func() {
			res, err := http.Get(base + "/slow")
			if err != nil {
				answer <- err.Error()
				return
			}
			res.Body.Close()
			answer <- res.Status
		}()
		<-inFlight
		cancel()
		time.Sleep(50 * time.Millisecond) // Run is waiting for the request
		mu.Lock()
		early := slices.Clone(events)
		mu.Unlock()
		if !slices.Equal(early, []string{"handover, healthz 200"}) {
			t.Fatalf("before the request finished: %v, want only the handover, with the server accepting", early)
		}
		close(finish)
		if got := <-answer; got != "200 OK" {
			t.Fatalf("in-flight request answered %s", got)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The context's watcher may run late; the order is what matters.
		mu.Lock()
		defer mu.Unlock()
		if i, j := slices.Index(events, "request done"), slices.Index(events, "closed"); i < 0 || j < i {
			t.Fatalf("events %v: want the request done before closed", events)
		}
	})
}

// Fatal shuts the server down and Run returns the error; Close still runs.
func TestRunFatal(t *testing.T) {
	boom := errors.New("clock check failed")
	closed := make(chan struct{})
	done := runBackground(context.Background(), testProcess(true, func(_ context.Context, env Env) (*App, error) {
		go env.Fatal(boom)
		return &App{Close: func() { close(closed) }}, nil
	}))
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("Run returned %v, want %v", err, boom)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end on Fatal")
	}
	select {
	case <-closed:
	default:
		t.Fatal("Close did not run")
	}
}

// An Open that fails ends Run with its error, the port released.
func TestRunOpenFails(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		bad := errors.New("data dir locked")
		var addr string
		err := Run(context.Background(), testProcess(fast, func(_ context.Context, env Env) (*App, error) {
			addr = env.Addr
			return nil, bad
		}))
		if !errors.Is(err, bad) {
			t.Fatalf("Run returned %v, want %v", err, bad)
		}
		if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
			t.Fatal("the port still answers after Run returned")
		}
	})
}

// A table route (App.Routes) is answered by its front route with
// --fast-http and by its net/http handler without it, when /metrics has no
// front counters.
func TestRunFastRoutes(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		addr := make(chan string, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := runBackground(ctx, testProcess(fast, func(_ context.Context, env Env) (*App, error) {
			addr <- env.Addr
			return &App{Routes: routes.Table{Routes: []routes.Route{{
				Pattern: "GET /which",
				Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("net/http")) }),
				Fast: func(_ *h1.Request, _ []byte, resp *h1.Response) bool {
					resp.Body = []byte("front")
					return true
				},
			}}}}, nil
		}))
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		base := "http://" + <-addr
		waitServing(t, base)
		want := map[bool]string{true: "front", false: "net/http"}[fast]
		if _, body, _ := get(t, &http.Client{Transport: &http.Transport{}}, base+"/which"); body != want {
			t.Fatalf("/which answered by %q, want %q", body, want)
		}
		_, metrics, _ := get(t, http.DefaultClient, base+"/metrics")
		if has := strings.Contains(metrics, "seqsvr_http_fast_requests_total 1"); has != fast {
			t.Fatalf("front counter on /metrics: %v, want %v", has, fast)
		}
	})
}
