package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/grpcreflect"

	_ "github.com/seqsvr/seqsvr/gen/seqsvr/v1" // registers the descriptors reflection serves
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// startTest serves o with Run on 127.0.0.1:0, the HTTP/1.1 front on, and
// stops it when the test ends.
func startTest(t *testing.T, o Options) string {
	t.Helper()
	return startRun(t, true, o)
}

// startRun serves o with Run on 127.0.0.1:0, the front on or off, and
// stops it when the test ends, failing unless Run returned nil.
func startRun(t *testing.T, fastHTTP bool, o Options) string {
	t.Helper()
	addr := make(chan string, 1)
	p := testProcess(fastHTTP, func(_ context.Context, env Env) (*App, error) {
		addr <- env.Addr
		return &App{Handler: o}, nil
	})
	p.Common.MaxBodyBytes = cmp.Or(o.MaxBodyBytes, DefaultMaxBodyBytes)
	p.Common.Debug.Pprof = o.Pprof
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	base := "http://" + <-addr
	waitServing(t, base)
	return base
}

// waitServing waits until Run has set the component's handler: /metrics
// answers 503 until then.
func waitServing(t *testing.T, base string) {
	t.Helper()
	poll.UntilOK(t, 5*time.Second, base+"/metrics answering", func() error {
		if code, _, _ := get(t, http.DefaultClient, base+"/metrics"); code != http.StatusOK {
			return fmt.Errorf("still %d", code)
		}
		return nil
	})
}

// testProcess is a Process on 127.0.0.1:0 with open as its Open.
func testProcess(fastHTTP bool, open func(context.Context, Env) (*App, error)) Process {
	return Process{
		Name:   "test",
		Addr:   "127.0.0.1:0",
		Common: Common{MaxBodyBytes: DefaultMaxBodyBytes, ShutdownGrace: 5 * time.Second, FastHTTP: fastHTTP},
		Logger: slog.New(slog.DiscardHandler),
		Open:   open,
	}
}

func protoEcho() map[string]http.Handler {
	return map[string]http.Handler{
		"GET /proto": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }),
		"POST /echo": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, err := io.Copy(io.Discard, r.Body)
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				return
			}
			io.WriteString(w, strings.Repeat("x", int(n%10)))
		}),
	}
}

func get(t *testing.T, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res
}

func TestHTTP1AndH2COnOnePort(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast-http=%v", fast), func(t *testing.T) {
			base := startRun(t, fast, Options{Routes: protoEcho()})
			if _, body, _ := get(t, http.DefaultClient, base+"/proto"); body != "HTTP/1.1" {
				t.Fatalf("HTTP/1.1 client saw %q", body)
			}
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
			if _, body, _ := get(t, h2c, base+"/proto"); body != "HTTP/2.0" {
				t.Fatalf("h2c client saw %q", body)
			}
		})
	}
}

func TestHealthzReadyz(t *testing.T) {
	ready := errors.New("no leader yet")
	base := startTest(t, Options{Ready: func(context.Context) error { return ready }})
	if code, body, _ := get(t, http.DefaultClient, base+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	if code, body, _ := get(t, http.DefaultClient, base+"/readyz"); code != 503 || !strings.Contains(body, "no leader yet") {
		t.Fatalf("/readyz while not ready: %d %q", code, body)
	}
	ready = nil
	if code, _, _ := get(t, http.DefaultClient, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz when ready: %d", code)
	}
	if code, body, _ := get(t, http.DefaultClient, base+"/metrics"); code != 200 || !strings.Contains(body, "# TYPE") {
		t.Fatalf("/metrics %d", code)
	}
}

func TestCORSPreflight(t *testing.T) {
	base := startTest(t, Options{})
	req, _ := http.NewRequest(http.MethodOptions, base+"/grpc.health.v1.Health/Check", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,connect-protocol-version,content-type,x-grpc-web")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("preflight status %d", res.StatusCode)
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" && got != "*" {
		t.Fatalf("Allow-Origin = %q", got)
	}
	if got := strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "connect-protocol-version") || !strings.Contains(got, "x-grpc-web") ||
		!strings.Contains(got, "authorization") {
		t.Fatalf("Allow-Headers = %q", got)
	}
	// A simple request carries the exposed headers gRPC-web needs.
	req, _ = http.NewRequest(http.MethodGet, base+"/healthz", nil)
	req.Header.Set("Origin", "https://app.example")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !strings.Contains(strings.ToLower(res.Header.Get("Access-Control-Expose-Headers")), "grpc-status") {
		t.Fatalf("Expose-Headers = %q", res.Header.Get("Access-Control-Expose-Headers"))
	}
}

func TestRequestSizeLimit(t *testing.T) {
	base := startTest(t, Options{Routes: protoEcho(), MaxBodyBytes: 1024})
	post := func(path, ctype string, n int) int {
		t.Helper()
		res, err := http.Post(base+path, ctype, strings.NewReader(strings.Repeat(" ", n)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("/echo", "text/plain", 1000); code != 200 {
		t.Fatalf("small plain body: %d", code)
	}
	if code := post("/echo", "text/plain", 4096); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("large plain body: %d, want 413", code)
	}
	// Connect unary with a JSON body over the limit: resource_exhausted (429).
	body := `{"service":"` + strings.Repeat("a", 4096) + `"}`
	res, err := http.Post(base+"/grpc.health.v1.Health/Check", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "resource_exhausted") {
		t.Fatalf("oversized Connect body: %d %s", res.StatusCode, b)
	}
}

func TestHealthAndReflection(t *testing.T) {
	base := startTest(t, Options{Services: []routes.Service{{
		Name: seqsvrv1connect.AllocServiceName, Path: "/seqsvr.v1.AllocService/", Handler: http.NotFoundHandler(),
	}}})
	check := func(service string) (int, string) {
		res, err := http.Post(base+"/grpc.health.v1.Health/Check", "application/json", strings.NewReader(`{"service":"`+service+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := check(seqsvrv1connect.AllocServiceName); code != 200 || !strings.Contains(body, "SERVING") {
		t.Fatalf("health: %d %s", code, body)
	}
	if code, _ := check("nope.Service"); code != 404 {
		t.Fatalf("unknown service health: %d, want 404", code)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	stream := grpcreflect.NewClient(h2c, base).NewStream(context.Background())
	defer stream.Close()
	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || string(n) == seqsvrv1connect.AllocServiceName
	}
	if !found {
		t.Fatalf("reflection lists %v", names)
	}
}
