package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/errs"
)

func TestEjectBackoff(t *testing.T) {
	ep := &endpoint{url: "x"}
	now := time.Unix(1000, 0)
	var got []time.Duration
	for range 8 {
		got = append(got, ep.fail(now, 5*time.Second))
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("ejections %v, want %v ms", got, want)
		}
	}
	if out, _ := ep.ejected(now.Add(4 * time.Second)); !out {
		t.Fatal("not ejected within its backoff")
	}
	if !ep.ok() {
		t.Fatal("ok did not report the recovery")
	}
	if out, _ := ep.ejected(now); out {
		t.Fatal("still ejected after a success")
	}
}

func TestPickPrefersHealthy(t *testing.T) {
	c, err := New([]string{"http://a", "http://b", "http://c"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b, cc := c.eps[0], c.eps[1], c.eps[2]
	now := time.Now()
	a.fail(now, time.Minute)
	b.fail(now, time.Minute)
	b.fail(now, time.Minute) // b is ejected longer than a
	for range 10 {
		if ep := c.pick(nil, map[*endpoint]bool{}); ep != cc {
			t.Fatalf("picked %s, want the only healthy one", ep.url)
		}
	}
	tried := map[*endpoint]bool{cc: true}
	if ep := c.pick(nil, tried); ep != a {
		t.Fatalf("picked %s, want the one ejected shortest", ep.url)
	}
	tried[a], tried[b] = true, true
	if ep := c.pick(nil, tried); ep != nil {
		t.Fatalf("picked %s after every endpoint was tried", ep.url)
	}
	owner := c.owner("http://owner")
	if ep := c.pick(owner, map[*endpoint]bool{}); ep != owner {
		t.Fatalf("picked %s, want the healthy preferred owner", ep.url)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err       error
		snowflake bool
		want      bool
	}{
		{errors.New("connection refused"), false, true},
		{connect.NewError(connect.CodeUnavailable, errors.New("x")), false, true},
		{connect.NewError(connect.CodeDeadlineExceeded, errors.New("x")), false, true},
		{connect.NewError(connect.CodeInvalidArgument, errors.New("x")), false, false}, // the code decides, wherever it came from
		{wire(connect.CodeInternal), false, true},
		{wire(connect.CodeInvalidArgument), false, false},
		{wire(connect.CodeNotFound), false, false},
		{wire(connect.CodeUnauthenticated), false, false},
		{wire(connect.CodeResourceExhausted), false, false},
		{wire(connect.CodeUnavailable), false, true},
		{wire(connect.CodeFailedPrecondition), false, false},
		{wire(connect.CodeFailedPrecondition), true, true},
	} {
		if got := errs.Judge(caller(tc.snowflake), tc.err).Retry; got != tc.want {
			t.Errorf("Judge(caller(%v), %v).Retry = %v, want %v", tc.snowflake, tc.err, got, tc.want)
		}
	}
}

// wire is an error as a server sent it.
func wire(code connect.Code) error {
	return connect.NewWireError(code, errors.New("from the server"))
}

func TestRouteOwner(t *testing.T) {
	a, b := &endpoint{url: "a"}, &endpoint{url: "b"}
	tab := &routeTable{sectionSize: 100, runs: []ownerRun{{0, 3, a}, {4, 4, nil}, {5, 9, b}}}
	for key, want := range map[uint64]*endpoint{0: a, 399: a, 400: nil, 499: nil, 500: b, 999: b, 1000: nil} {
		if got := tab.owner(key); got != want {
			t.Errorf("owner(%d) = %v, want %v", key, got, want)
		}
	}
	if (*routeTable)(nil).owner(5) != nil {
		t.Error("a missing table names an owner")
	}
}

func TestNewChecksOptions(t *testing.T) {
	for name, f := range map[string]func() (*Client, error){
		"no endpoints": func() (*Client, error) { return New(nil) },
		"buffer 0":     func() (*Client, error) { return New([]string{"a"}, WithLocalBuffer(0)) },
		"buffer big":   func() (*Client, error) { return New([]string{"a"}, WithLocalBuffer(MaxLocalBuffer+1)) },
		"timeout":      func() (*Client, error) { return New([]string{"a"}, WithTimeout(0)) },
		"CA file":      func() (*Client, error) { return New([]string{"a"}, WithCAFile("/nonexistent")) },
		"empty token":  func() (*Client, error) { return New([]string{"a"}, WithToken("")) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	c, err := New([]string{"10.0.0.1:8080", "http://b/", "http://b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); len(got) != 2 || got[0] != "http://10.0.0.1:8080" || got[1] != "http://b" {
		t.Fatalf("endpoints %q", got)
	}
	c.Close()
	if _, err := c.NextID(context.Background(), "t"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
