package main

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/alloc/segment"
	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/alloc/snowflake"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/serve"
)

func TestConfigDefaultsAndEnv(t *testing.T) {
	var out bytes.Buffer
	noenv := func(string) string { return "" }
	if _, err := parseConfig(nil, noenv, &out); err == nil || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("missing --store: %v", err)
	}
	env := map[string]string{"SEQSVR_STORE": "http://a:1, http://b:2", "SEQSVR_DATA_DIR": "/d", "SEQSVR_MAX_STEP": "500"}
	c, err := parseConfig([]string{"--http-addr", "127.0.0.1:9123", "--max-step", "700"}, func(k string) string { return env[k] }, &out)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if c.NodeID != host+":9123" {
		t.Fatalf("default node-id %q, want hostname:port", c.NodeID)
	}
	if len(c.Stores) != 2 || c.Stores[1] != "http://b:2" || c.DataDir != "/d" || c.MaxStep != 700 {
		t.Fatalf("config %+v", c)
	}
	if _, err := parseConfig([]string{"--store", "http://a:1"}, noenv, &out); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("missing --data-dir with snowflake on: %v", err)
	}
	if _, err := parseConfig([]string{"--store", "http://a:1", "--snowflake=false"}, noenv, &out); err != nil {
		t.Fatalf("--snowflake=false without --data-dir: %v", err)
	}
	if code := serve.Main("allocsvr", []string{"--help"}, noenv, &out, parseConfig); code != 0 || !strings.Contains(out.String(), "SEQSVR_NODE_ID") || !strings.Contains(out.String(), "--fast-http") {
		t.Fatalf("--help: code %d", code)
	}
}

func TestConfigSeqFlags(t *testing.T) {
	var out bytes.Buffer
	env := map[string]string{"SEQSVR_SEQ_FENCE_MARGIN": "300ms"}
	getenv := func(k string) string { return env[k] }
	c, err := parseConfig([]string{"--store", "http://a:1", "--snowflake=false"}, getenv, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Seq || c.SeqHeartbeatInterval != 500*time.Millisecond || c.SeqFenceMargin != 300*time.Millisecond || c.AdvertiseURL != "" {
		t.Fatalf("seq defaults %+v", c)
	}
	c, err = parseConfig([]string{"--store", "http://a:1", "--snowflake=false", "--seq=false", "--advertise-url", "http://x:1"}, getenv, &out)
	if err != nil || c.Seq || c.AdvertiseURL != "http://x:1" {
		t.Fatalf("--seq=false: %+v, %v", c, err)
	}
	if _, err := parseConfig([]string{"--store", "http://a:1", "--snowflake=false", "--seq-heartbeat-interval", "0s"}, getenv, &out); err == nil {
		t.Fatal("--seq-heartbeat-interval 0 accepted")
	}
}

// The tuning flags default to their packages' DefaultConfig values, and no
// help text repeats a default as a number of its own ("0: 500ms").
func TestConfigDefaultsFromPackages(t *testing.T) {
	var out bytes.Buffer
	c, err := parseConfig([]string{"--store", "http://a:1", "--data-dir", "/d"}, func(string) string { return "" }, &out)
	if err != nil {
		t.Fatal(err)
	}
	seg, sf, sq, sc := segment.DefaultConfig(), snowflake.DefaultConfig(), seq.DefaultConfig(), storeclient.DefaultOptions()
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"max-step", c.MaxStep, seg.MaxStep},
		{"prefetch-ratio", c.PrefetchRatio, seg.PrefetchRatio},
		{"empty-wait", c.EmptyWait, seg.EmptyWait},
		{"load-timeout", c.LoadTimeout, seg.LoadTimeout},
		{"negative-cache-ttl", c.NegativeCacheTTL, seg.NegativeCacheTTL},
		{"snowflake-max-clock-offset", c.SnowflakeMaxClockOffset, sf.MaxClockOffset},
		{"snowflake-renew-interval", c.SnowflakeRenewInterval, sf.RenewInterval},
		{"snowflake-fence-margin", c.SnowflakeFenceMargin, sf.FenceMargin},
		{"snowflake-max-backward-wait", c.SnowflakeMaxBackward, sf.MaxBackwardWait},
		{"seq-heartbeat-interval", c.SeqHeartbeatInterval, sq.HeartbeatInterval},
		{"seq-fence-margin", c.SeqFenceMargin, sq.FenceMargin},
		{"store-request-timeout", c.StoreRequestTimeout, sc.RequestTimeout},
	} {
		if f.got != f.want || reflect.ValueOf(f.got).IsZero() {
			t.Errorf("--%s defaults to %v, want the package's %v", f.name, f.got, f.want)
		}
	}
	out.Reset()
	serve.Main("allocsvr", []string{"--help"}, func(string) string { return "" }, &out, parseConfig)
	if m := regexp.MustCompile(`\(0: [^)]*\d`).FindString(out.String()); m != "" {
		t.Errorf("--help repeats a default as text: %q", m)
	}
}
