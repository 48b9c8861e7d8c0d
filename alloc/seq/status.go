package seq

import (
	"log/slog"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Status is this Node's share of per-key sequences, for AllocService.Status.
func (n *Node) Status() *seqsvrv1.SeqStatus {
	l := n.lease.Load()
	now := n.clock.Now()
	st := &seqsvrv1.SeqStatus{
		LeaseValid: l.valid(now), Reason: n.reason(),
		Forwards: n.forwards.Load(), MaxSeqWrites: n.writes.Load(), FirstUseWrites: n.markWrites.Load(),
	}
	if st.LeaseValid {
		st.LeaseLeftMs = l.fenceAt.Sub(now).Milliseconds()
	}
	ts := n.loadTables()
	byName := map[string]*seqsvrv1.SeqSpaceStatus{}
	for name, t := range ts {
		sp := &seqsvrv1.SeqSpaceStatus{Space: name, RoutingVersion: t.version(), SectionsOwned: t.owned(n.cfg.NodeID)}
		byName[name] = sp
		st.Spaces = append(st.Spaces, sp)
	}
	n.mu.RLock()
	for k, s := range n.sections {
		s.mu.Lock()
		keys := len(s.cur)
		s.mu.Unlock()
		if sp := byName[k.space]; sp != nil && keys > 0 {
			sp.SectionsLoaded++
			sp.KeysInMemory += uint64(keys)
		}
	}
	n.mu.RUnlock()
	sort.Slice(st.Spaces, func(i, j int) bool { return st.Spaces[i].Space < st.Spaces[j].Space })
	return st
}

// metrics exports the Node's figures, computed from Status at scrape time
// so the hot path pays nothing for them.
type metrics struct {
	n                                   *Node
	owned, keys, writes, marks, fwd, ok *prometheus.Desc
	left                                *prometheus.Desc
}

func newMetrics(n *Node, reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	m := &metrics{
		n: n,
		owned: prometheus.NewDesc("seqsvr_seq_sections_owned",
			"Sections the routing table gives this allocsvr, per space.", []string{"space"}, nil),
		keys: prometheus.NewDesc("seqsvr_seq_keys_in_memory",
			"Keys of loaded sections held in memory, per space.", []string{"space"}, nil),
		writes: prometheus.NewDesc("seqsvr_seq_max_seq_writes_total",
			"RaiseSections writes (loads and raises of a section's max_seq).", nil, nil),
		marks: prometheus.NewDesc("seqsvr_seq_first_use_writes_total",
			"RaiseSections writes that only recorded keys' first uses in the store's used-sets.", nil, nil),
		fwd: prometheus.NewDesc("seqsvr_seq_forwards_total",
			"Calls forwarded to a section's owner.", nil, nil),
		ok: prometheus.NewDesc("seqsvr_seq_lease_valid",
			"1 while the per-key sequence lease is valid by this allocsvr's clock.", nil, nil),
		// For the lease alert: heartbeats renew it every 500ms by default.
		left: prometheus.NewDesc("seqsvr_seq_lease_left_seconds",
			"Time until this allocsvr stops serving its sections unless a heartbeat renews the lease; 0 when not valid.", nil, nil),
	}
	if err := reg.Register(m); err != nil {
		n.log.Warn("seq metrics not registered", slog.Any("err", err))
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.owned, m.keys, m.writes, m.marks, m.fwd, m.ok, m.left} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.n.Status()
	for _, sp := range st.GetSpaces() {
		ch <- prometheus.MustNewConstMetric(m.owned, prometheus.GaugeValue, float64(sp.GetSectionsOwned()), sp.GetSpace())
		ch <- prometheus.MustNewConstMetric(m.keys, prometheus.GaugeValue, float64(sp.GetKeysInMemory()), sp.GetSpace())
	}
	ch <- prometheus.MustNewConstMetric(m.writes, prometheus.CounterValue, float64(st.GetMaxSeqWrites()))
	ch <- prometheus.MustNewConstMetric(m.marks, prometheus.CounterValue, float64(st.GetFirstUseWrites()))
	ch <- prometheus.MustNewConstMetric(m.fwd, prometheus.CounterValue, float64(st.GetForwards()))
	valid := 0.0
	if st.GetLeaseValid() {
		valid = 1
	}
	ch <- prometheus.MustNewConstMetric(m.ok, prometheus.GaugeValue, valid)
	ch <- prometheus.MustNewConstMetric(m.left, prometheus.GaugeValue, float64(st.GetLeaseLeftMs())/1000)
}
