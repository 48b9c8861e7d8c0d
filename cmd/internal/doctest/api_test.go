package doctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// waitTimeout bounds a wait for processes a block started.
const waitTimeout = 20 * time.Second

// call is a Connect JSON call (protojson: int64 values as strings) of
// method ("seqsvr.v1.StoreService/ClusterStatus") at base, decoded into
// res.
func call(base, method string, req, res any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/"+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", method, resp.Status, out)
	}
	return json.Unmarshal(out, res)
}

type clusterStatus struct {
	LeaderID string `json:"leaderId"`
	Members  []struct {
		ID       string `json:"id"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
	ClusterID  string `json:"clusterId"`
	Generation string `json:"generation"`
}

// voters is "s1=voter,s2=nonvoter,...", sorted.
func (c clusterStatus) voters() string {
	var m []string
	for _, x := range c.Members {
		m = append(m, x.ID+"="+x.Suffrage)
	}
	slices.Sort(m)
	return strings.Join(m, ",")
}

func (c clusterStatus) generation() int64 {
	g, _ := strconv.ParseInt(c.Generation, 10, 64)
	return g
}

func status(base string) (clusterStatus, error) {
	var st clusterStatus
	err := call(base, "seqsvr.v1.StoreService/ClusterStatus", struct{}{}, &st)
	return st, err
}

// waitMembers waits until the member at h reports a leader and exactly
// the members ids, each a voter, with a cluster ID, and returns that
// status.
func (s *site) waitMembers(h *host, ids ...string) clusterStatus {
	t := s.t
	t.Helper()
	var want []string
	for _, id := range ids {
		want = append(want, id+"=voter")
	}
	var st clusterStatus
	poll.UntilOK(t, waitTimeout, fmt.Sprintf("%s to report members %v, all voters", h.id, ids), func() error {
		s.alive()
		var err error
		if st, err = status(h.base()); err != nil {
			return err
		}
		if st.LeaderID == "" || st.ClusterID == "" || st.voters() != strings.Join(want, ",") {
			return fmt.Errorf("leader %q, cluster %q, members %s", st.LeaderID, st.ClusterID, st.voters())
		}
		return nil
	})
	return st
}

// waitReady waits until base answers /readyz with 200.
func (s *site) waitReady(base string) {
	t := s.t
	t.Helper()
	poll.UntilOK(t, waitTimeout, base+"/readyz", func() error {
		s.alive()
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	})
}

// createTag creates tag on the store (any member forwards it).
func (s *site) createTag(h *host, tag string) {
	t := s.t
	t.Helper()
	poll.UntilOK(t, waitTimeout, "CreateTag "+tag, func() error {
		s.alive()
		var res map[string]any
		err := call(h.base(), "seqsvr.v1.StoreService/CreateTag", map[string]string{"tag": tag, "step": "1000"}, &res)
		if err != nil && strings.Contains(err.Error(), "already_exists") {
			return nil // a retried call that went through
		}
		return err
	})
}

// reserve reserves n segments of tag through h (any member forwards)
// and returns the first ID of the first and the last ID of the last.
func (s *site) reserve(h *host, tag string, n int) (first, last int64) {
	t := s.t
	t.Helper()
	for i := range n {
		poll.UntilOK(t, waitTimeout, "ReserveSegment "+tag, func() error {
			s.alive()
			var seg struct {
				First string `json:"first"`
				Last  string `json:"last"`
			}
			if err := call(h.base(), "seqsvr.v1.StoreService/ReserveSegment", map[string]string{"tag": tag}, &seg); err != nil {
				return err
			}
			f, err := strconv.ParseInt(seg.First, 10, 64)
			if err != nil {
				return err
			}
			if i == 0 {
				first = f
			}
			last, err = strconv.ParseInt(seg.Last, 10, 64)
			return err
		})
	}
	return first, last
}

// waitAllocFollows waits until the allocsvr reports cluster as
// the store cluster it follows.
func (s *site) waitAllocFollows(cluster string) {
	t := s.t
	t.Helper()
	poll.UntilOK(t, waitTimeout, "the allocsvr to follow cluster "+cluster, func() error {
		s.alive()
		var st struct {
			ClusterID string `json:"clusterId"`
		}
		if err := call("http://127.0.0.1:"+strconv.Itoa(s.alloc), "seqsvr.v1.AllocService/Status", struct{}{}, &st); err != nil {
			return err
		}
		if st.ClusterID != cluster {
			return fmt.Errorf("follows %q", st.ClusterID)
		}
		return nil
	})
}
