package serve

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

type testCfg struct {
	addr  string
	peers string
	ttl   time.Duration
	n     int
	log   LogConfig
}

func newTestFlags(out io.Writer) (*flag.FlagSet, *testCfg) {
	c := &testCfg{}
	fs := NewFlagSet("storesvr", "test binary", out)
	fs.StringVar(&c.addr, "http-addr", "127.0.0.1:8080", "HTTP address")
	fs.StringVar(&c.peers, "peers", "", "initial members")
	fs.DurationVar(&c.ttl, "worker-lease-ttl", 10*time.Second, "lease")
	fs.IntVar(&c.n, "snapshot-threshold", 100, "entries")
	c.log.Register(fs)
	return fs, c
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestEnvName(t *testing.T) {
	if got := EnvName("worker-lease-ttl"); got != "SEQSVR_WORKER_LEASE_TTL" {
		t.Fatalf("EnvName = %q", got)
	}
}

func TestFlagsWinOverEnvWhichWinsOverDefault(t *testing.T) {
	fs, c := newTestFlags(io.Discard)
	env := envOf(map[string]string{
		"SEQSVR_HTTP_ADDR":          "10.0.0.1:1",
		"SEQSVR_PEERS":              "a=x@y",
		"SEQSVR_WORKER_LEASE_TTL":   "3s",
		"SEQSVR_SNAPSHOT_THRESHOLD": "7",
	})
	if err := Parse(fs, []string{"--http-addr", "127.0.0.1:9", "-snapshot-threshold=9"}, env); err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9" || c.n != 9 {
		t.Fatalf("flag lost to env: addr %q n %d", c.addr, c.n)
	}
	if c.peers != "a=x@y" || c.ttl != 3*time.Second {
		t.Fatalf("env not applied: peers %q ttl %v", c.peers, c.ttl)
	}
	if c.log.Level != "info" || c.log.Format != "text" {
		t.Fatalf("defaults changed: %+v", c.log)
	}
}

func TestBadEnvValueNamesTheVariable(t *testing.T) {
	fs, _ := newTestFlags(io.Discard)
	err := Parse(fs, nil, envOf(map[string]string{"SEQSVR_WORKER_LEASE_TTL": "soon"}))
	if err == nil || !strings.Contains(err.Error(), "SEQSVR_WORKER_LEASE_TTL") {
		t.Fatalf("err = %v, want one naming the variable", err)
	}
	fs, _ = newTestFlags(io.Discard)
	if err := Parse(fs, []string{"stray"}, envOf(nil)); err == nil {
		t.Fatal("positional argument accepted")
	}
}

func TestHelpListsEveryFlagWithItsVariable(t *testing.T) {
	var out bytes.Buffer
	fs, _ := newTestFlags(&out)
	err := Parse(fs, []string{"--help"}, envOf(nil))
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"--http-addr", "SEQSVR_HTTP_ADDR", "--peers", "--worker-lease-ttl", "SEQSVR_LOG_FORMAT", "--log-level"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestLogConfig(t *testing.T) {
	var buf bytes.Buffer
	l, err := LogConfig{Level: "debug", Format: "json"}.NewLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("hello", "k", 1)
	if !strings.HasPrefix(buf.String(), "{") || !strings.Contains(buf.String(), `"k":1`) {
		t.Fatalf("not JSON at debug: %q", buf.String())
	}
	for _, bad := range []LogConfig{{Level: "loud", Format: "text"}, {Level: "info", Format: "xml"}} {
		if _, err := bad.NewLogger(&buf); err == nil {
			t.Fatalf("%+v accepted", bad)
		}
	}
	if got := SplitList(" a, ,b ,"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("SplitList = %q", got)
	}
}

func TestCommon(t *testing.T) {
	var c Common
	fs := NewFlagSet("allocsvr", "test binary", io.Discard)
	c.Register(fs)
	if err := Parse(fs, nil, envOf(map[string]string{"SEQSVR_PPROF": "true"})); err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyBytes != DefaultMaxBodyBytes || c.ShutdownGrace != 5*time.Second || c.Log.Level != "info" || !c.Debug.Pprof || !c.FastHTTP {
		t.Fatalf("defaults and environment: %+v", c)
	}
	if errs := c.Check(); errs != nil {
		t.Fatalf("defaults rejected: %v", errs)
	}
	c = Common{}
	fs = NewFlagSet("allocsvr", "test binary", io.Discard)
	c.Register(fs)
	if err := Parse(fs, nil, envOf(map[string]string{"SEQSVR_FAST_HTTP": "false"})); err != nil || c.FastHTTP {
		t.Fatalf("SEQSVR_FAST_HTTP=false: FastHTTP %v (%v)", c.FastHTTP, err)
	}
	for _, v := range []string{"0", "-1"} {
		c = Common{}
		fs = NewFlagSet("allocsvr", "test binary", io.Discard)
		c.Register(fs)
		if err := Parse(fs, []string{"--max-body-bytes", v}, envOf(nil)); err != nil {
			t.Fatal(err)
		}
		if errs := c.Check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "--max-body-bytes must be positive") {
			t.Fatalf("--max-body-bytes %s: %v", v, errs)
		}
	}
}

// The limit flags default to DefaultLimits, read SEQSVR_* like every flag,
// and refuse values that would turn a bound off by accident.
func TestLimitFlags(t *testing.T) {
	parse := func(args []string, env map[string]string) Common {
		t.Helper()
		var c Common
		fs := NewFlagSet("storesvr", "test binary", io.Discard)
		c.Register(fs)
		if err := Parse(fs, args, envOf(env)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := parse(nil, nil); c.Limits != DefaultLimits() {
		t.Fatalf("defaults: %+v, want %+v", c.Limits, DefaultLimits())
	}
	c := parse([]string{"--max-conns", "7"}, map[string]string{"SEQSVR_BODY_TIMEOUT": "3s", "SEQSVR_MAX_CONNS": "9",
		"SEQSVR_MAX_CONNS_PER_ADDR": "0", "SEQSVR_HTTP2_MAX_STREAMS": "16", "SEQSVR_BODY_MIN_RATE": "0"})
	if l := c.Limits; l.BodyTimeout != 3*time.Second || l.MaxConns != 7 || l.MaxConnsPerAddr != 0 || l.HTTP2MaxStreams != 16 || l.BodyMinRate != 0 {
		t.Fatalf("flags and environment: %+v", l)
	}
	if errs := c.Check(); errs != nil {
		t.Fatalf("valid limits rejected: %v", errs)
	}
	for _, args := range [][]string{{"--body-timeout", "0s"}, {"--header-timeout", "-1s"}, {"--http2-max-streams", "0"},
		{"--max-body-bytes-in-flight", "0"}, {"--max-conns", "-1"}} {
		c := parse(args, nil)
		if errs := c.Check(); len(errs) != 1 {
			t.Errorf("%q: %v, want one error", args, errs)
		}
	}
}
