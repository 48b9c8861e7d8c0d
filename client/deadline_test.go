package client_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/client"
	"github.com/seqsvr/seqsvr/internal/launch"
)

func deadURL(t *testing.T) string {
	t.Helper()
	port, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return "https://127.0.0.1:" + itoa(port)
}

func itoa(n int) string { return strconv.Itoa(n) }

func newClientAt(t *testing.T, urls []string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(urls, append([]client.Option{client.WithToken(token), client.WithCAFile(caFile)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// timed runs f with a context of d and returns its error and how long it took.
func timed(d time.Duration, f func(ctx context.Context) error) (error, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	return err, time.Since(start)
}

// Calls end with the caller's deadline (plus a little), answer
// deadline_exceeded naming the last failure, and fail at once on answers
// no other endpoint would change.
func TestDeadlines(t *testing.T) {
	c := sharedCluster(t)
	createTag(t, c, "deadline", 1000)
	const slack = 400 * time.Millisecond

	t.Run("nothing listening", func(t *testing.T) {
		cl := newClientAt(t, []string{deadURL(t), deadURL(t)})
		err, took := timed(300*time.Millisecond, func(ctx context.Context) error {
			_, err := cl.NextID(ctx, "deadline")
			return err
		})
		if client.Code(err) != connect.CodeDeadlineExceeded || !strings.Contains(err.Error(), "last attempt") {
			t.Fatalf("err = %v, want deadline_exceeded naming the last attempt", err)
		}
		if took < 300*time.Millisecond || took > 300*time.Millisecond+slack {
			t.Fatalf("returned after %v, want about 300ms", took)
		}
	})

	t.Run("paused server", func(t *testing.T) {
		a := c.Allocs[0]
		cl := newClientAt(t, []string{a.URL()})
		if _, err := cl.NextID(context.Background(), "deadline"); err != nil {
			t.Fatal(err) // a warm connection, so the pause hits a call in flight
		}
		if err := a.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer a.Signal(syscall.SIGCONT)
		err, took := timed(300*time.Millisecond, func(ctx context.Context) error {
			_, err := cl.NextID(ctx, "deadline")
			return err
		})
		if client.Code(err) != connect.CodeDeadlineExceeded {
			t.Fatalf("err = %v, want deadline_exceeded", err)
		}
		if took > 300*time.Millisecond+slack {
			t.Fatalf("returned after %v, want about 300ms", took)
		}
	})

	t.Run("paused server skipped after the attempt timeout", func(t *testing.T) {
		a, b := c.Allocs[0], c.Allocs[1]
		// Count attempts by endpoint: the claim is that the paused one is
		// tried once and then ejected, which a loaded machine's timing
		// cannot blur the way a per-call time bound can.
		var mu sync.Mutex
		attempts := map[string]int{}
		count := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				mu.Lock()
				attempts[req.Peer().Addr]++
				mu.Unlock()
				return next(ctx, req)
			}
		})
		cl := newClientAt(t, []string{a.URL(), b.URL()}, client.WithAttemptTimeout(200*time.Millisecond),
			client.WithInterceptors(count))
		if err := a.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer a.Signal(syscall.SIGCONT)
		start := time.Now()
		for range 10 {
			err, took := timed(5*time.Second, func(ctx context.Context) error {
				_, err := cl.NextID(ctx, "deadline")
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if took > 200*time.Millisecond+slack {
				t.Logf("a call took %v (a loaded machine?)", took)
			}
		}
		// Ejection lasts 100 ms and doubles on each failure in a row, so
		// over ten calls the paused server gets one attempt, a few more
		// only if the calls crawl; round-robin without ejection gives it
		// five or more, each costing the attempt timeout.
		mu.Lock()
		paused := attempts[strings.TrimPrefix(a.URL(), "https://")]
		mu.Unlock()
		elapsed := time.Since(start)
		if limit := 1 + int(elapsed/(100*time.Millisecond)); paused < 1 || paused > min(limit, 4) {
			t.Fatalf("the paused server got %d attempts in 10 calls over %v (attempts by address %v)", paused, elapsed, attempts)
		}
	})

	t.Run("final answers are not retried", func(t *testing.T) {
		cl := newClient(t)
		for _, tc := range []struct {
			name string
			call func(ctx context.Context) error
			want connect.Code
		}{
			{"unknown tag", func(ctx context.Context) error { _, err := cl.NextID(ctx, "no-such-tag"); return err }, connect.CodeNotFound},
			{"bad tag", func(ctx context.Context) error { _, err := cl.NextID(ctx, "bad tag!"); return err }, connect.CodeInvalidArgument},
			{"count", func(ctx context.Context) error { _, err := cl.NextIDs(ctx, "deadline", 10001); return err }, connect.CodeInvalidArgument},
			{"no keys", func(ctx context.Context) error { _, err := cl.NextSeqs(ctx, "example-inbox", nil); return err }, connect.CodeInvalidArgument},
		} {
			err, took := timed(5*time.Second, tc.call)
			if client.Code(err) != tc.want || took > time.Second {
				t.Errorf("%s: err = %v after %v, want %v at once", tc.name, err, took, tc.want)
			}
		}
		bad, err := client.New(allocURLs, client.WithToken("not-a-token"), client.WithCAFile(caFile))
		if err != nil {
			t.Fatal(err)
		}
		defer bad.Close()
		if _, err := bad.NextID(context.Background(), "deadline"); client.Code(err) != connect.CodeUnauthenticated {
			t.Errorf("unknown token: err = %v, want unauthenticated", err)
		}
	})
}
