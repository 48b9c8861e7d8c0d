package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// probe is one GET of url as a readiness probe sees it: whether it
// answered 200, and what came back.
func probe(ctx context.Context, hc *http.Client, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode == http.StatusOK, fmt.Sprintf("%s: %s", res.Status, b)
}

// waitProbe probes every 200 ms until ready answers true; at ctx's end
// it fails naming what and the last answer.
func waitProbe(ctx context.Context, what string, ready func(context.Context) (bool, string)) error {
	for {
		ok, saw := ready(ctx)
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %s", what, saw)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
