package web_test

// Reading a process's /metrics.

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// metric reads one series (name with its labels, as /metrics spells it)
// from p; a missing series is 0.
func metric(t *testing.T, c *launch.Cluster, p *launch.Proc, series string) float64 {
	t.Helper()
	v, _ := metricValue(t, c, p, series)
	return v
}

func metricValue(t *testing.T, c *launch.Cluster, p *launch.Proc, series string) (float64, bool) {
	t.Helper()
	var v float64
	found := false
	scrape(t, c, p, func(line string) {
		if s, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ = strconv.ParseFloat(s, 64)
			found = true
		}
	})
	return v, found
}

// metricSum adds up every series whose line starts with prefix.
func metricSum(t *testing.T, c *launch.Cluster, p *launch.Proc, prefix string) float64 {
	t.Helper()
	var sum float64
	scrape(t, c, p, func(line string) {
		if strings.HasPrefix(line, prefix) {
			f, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += f
		}
	})
	return sum
}

func scrape(t *testing.T, c *launch.Cluster, p *launch.Proc, each func(string)) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, p.URL()+"/metrics", nil)
	res, err := c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
}
