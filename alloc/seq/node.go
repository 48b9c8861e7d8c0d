package seq

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// ErrClosed answers calls once Close began.
var ErrClosed = errs.New(errs.Unavailable, "per-key sequences are shutting down on this allocsvr")

// secKey names one section of one space.
type secKey struct {
	space   string
	section uint64
}

// Node is one allocsvr's share of per-key sequences: its lease, the
// routing tables, the memory of the sections it serves, and the clients
// it forwards calls with.
type Node struct {
	cfg      Config
	store    Store
	clock    clock.Clock
	epoch    time.Time // monoNs counts from here
	sysClock bool      // clock is the plain system clock (monoNs)
	log      *slog.Logger
	instance string

	lease  atomic.Pointer[lease]
	tables atomic.Pointer[tableSet]

	// mu guards sections and orders table changes against section loads:
	// a section is created only if the current table lets this Node serve
	// it, and a table change drops (under the section's own mutex) every
	// section it takes away. Lock order: mu, then a section's mu.
	mu       sync.RWMutex
	sections map[secKey]*section
	dirs     map[string]*spaceDir // by space: sections by number (dir.go)
	closed   atomic.Bool

	life     context.Context // background raises; ends in Close
	stop     context.CancelFunc
	kick     chan struct{}
	loopStop context.CancelFunc
	loopDone chan struct{}

	beatMu  sync.Mutex
	beatErr error

	peers sync.Map // base URL -> seqsvrv1connect.SeqServiceClient

	forwards, writes, markWrites atomic.Uint64

	markMu  sync.Mutex
	markers map[string]*marker // by space: its group commit of first uses (marks.go)
}

// New returns a Node that serves nothing until Start's first heartbeat is
// answered.
func New(store Store, cfg Config) (*Node, error) {
	if cfg.NodeID == "" || cfg.URL == "" {
		return nil, errors.New("seq: NodeID and URL are required")
	}
	cfg = cfg.withDefaults()
	n := &Node{
		cfg: cfg, store: store, clock: cfg.Clock, log: cfg.Logger.With("component", "seq"),
		instance: cmp.Or(cfg.InstanceID, rand.Text()), sections: map[secKey]*section{}, dirs: map[string]*spaceDir{},
		markers: map[string]*marker{},
		kick:    make(chan struct{}, 1),
	}
	n.epoch = n.clock.Now()
	n.sysClock = n.clock == clock.System() && !faults.Enabled
	n.lease.Store(&lease{})
	n.life, n.stop = context.WithCancel(context.Background())
	newMetrics(n, cfg.Registerer)
	return n, nil
}

// Start runs the heartbeat loop until ctx ends or Close.
func (n *Node) Start(ctx context.Context) {
	ctx, n.loopStop = context.WithCancel(ctx)
	n.loopDone = make(chan struct{})
	go n.loop(ctx)
}

// Close stops serving every section, stops the heartbeat loop and sends
// one leaving heartbeat (bounded by LeaveTimeout), so the store moves this
// Node's sections at once instead of after its lease expires.
func (n *Node) Close() {
	n.closed.Store(true)
	n.dropAll()
	if n.loopStop != nil {
		n.loopStop()
		<-n.loopDone
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.LeaveTimeout)
	defer cancel()
	if err := n.beat(ctx, true); err != nil {
		n.log.Warn("seq leaving heartbeat failed; sections move when the lease expires", "err", err)
	} else {
		n.log.Info("seq sections released")
	}
	n.stop()
}

func (n *Node) loadTables() tables {
	if p := n.tables.Load(); p != nil {
		return p.byName
	}
	return nil
}

// section is k's memory, created (not yet loaded) when the current table
// lets this Node serve it.
func (n *Node) section(k secKey) (*section, error) {
	n.mu.RLock()
	s := n.sections[k]
	n.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if s = n.sections[k]; s != nil {
		return s, nil
	}
	if n.closed.Load() {
		return nil, ErrClosed
	}
	t := n.loadTables()[k.space]
	if t == nil || !t.serves(n.cfg.NodeID, k.section) {
		return nil, notServing(k)
	}
	s = &section{key: k, gen: n.lease.Load().gen, size: t.sectionLen(k.section)}
	n.sections[k] = s
	n.setLocked(k, s)
	return s, nil
}

func notServing(k secKey) error {
	return fmt.Errorf("%w: this allocsvr does not serve section %d of space %q (it moved; retry)", errs.Unavailable, k.section, k.space)
}

// dropLocked forgets s (n.mu held): calls holding it refuse from now on.
func (n *Node) dropLocked(k secKey, s *section) {
	s.drop()
	delete(n.sections, k)
	n.clearLocked(k, s)
}

// forget drops s if it is still k's memory (a refused raise).
func (n *Node) forget(s *section) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sections[s.key] == s {
		n.dropLocked(s.key, s)
	}
}

func (n *Node) dropAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, s := range n.sections {
		n.dropLocked(k, s)
	}
}

// serving is nil when s may hand out values now: not dropped, loaded
// under the current lease, which is valid (s.mu held).
func (n *Node) serving(s *section) error {
	switch l := n.lease.Load(); {
	case n.closed.Load():
		return ErrClosed
	case s.dropped:
		return notServing(s.key)
	case s.gen != l.gen || !l.valid(n.clock.Now()):
		return fmt.Errorf("%w: %s", errs.Unavailable, cmp.Or(n.reason(), "lease renewed after a lapse; reloading"))
	}
	return nil
}

// reason is why this Node serves nothing, "" while its lease is valid.
func (n *Node) reason() string {
	if n.lease.Load().valid(n.clock.Now()) {
		return ""
	}
	n.beatMu.Lock()
	err := n.beatErr
	n.beatMu.Unlock()
	switch {
	case n.loadTables() == nil && err == nil:
		return "per-key sequence lease not acquired yet"
	case err != nil:
		return "per-key sequence lease lapsed: " + errs.Message(err)
	}
	return "per-key sequence lease lapsed: no heartbeat answered in time"
}

// raiseContext bounds one background raise; it ends early on Close.
func (n *Node) raiseContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(n.life, n.cfg.RaiseTimeout)
}
