package storage

import (
	"context"
	"net/http"
	"strings"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// LiveMember is the first member of st (other than cfg.NodeID) whose HTTP
// address answers anything at all within a second, "" if none does. A
// recovery is refused while one answers: it would split a healthy cluster.
func LiveMember(ctx context.Context, cfg Config, st *seqsvrv1.FSMSnapshot) (id, addr string) {
	c, err := cfg.withDefaults()
	if err != nil {
		return "", ""
	}
	for _, m := range st.GetMembers() {
		if m.GetId() == c.NodeID || m.GetHttpAddr() == "" {
			continue
		}
		base := m.GetHttpAddr()
		if !strings.Contains(base, "://") {
			base = c.HTTPScheme + "://" + base
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		req, err := http.NewRequestWithContext(pctx, http.MethodGet, base+"/healthz", nil)
		if err == nil {
			var res *http.Response
			if res, err = c.HTTPClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
		cancel()
		if err == nil {
			return m.GetId(), m.GetHttpAddr()
		}
	}
	return "", ""
}
