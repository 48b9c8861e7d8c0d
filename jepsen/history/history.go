// Package history records every client operation of a fault-injection run:
// what was asked, of which process (and which lifetime of it), when it was
// called and when it returned on the run's monotonic clock, and what came
// back. The checkers read this and the run's final state (the harness's
// final.json: each member's final max_id, the tags, the snowflake layout,
// the lease TTL), so a saved run can be re-checked offline
// (jepsen -check DIR).
package history

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"sync"
	"time"
)

// Operation kinds.
const (
	Reserve   = "reserve"   // StoreService.ReserveSegment
	GetTag    = "get"       // StoreService.GetTag
	NextIDs   = "next"      // AllocService.NextIDs
	Snowflake = "snowflake" // AllocService.NextSnowflakeIDs
	Create    = "create"    // StoreService.CreateTag
	Update    = "update"    // StoreService.UpdateTag
	Delete    = "delete"    // StoreService.DeleteTag
	// Resend is a ReserveSegment that re-sends the request_id of an
	// earlier Reserve on purpose (same tag and size): it must answer that
	// reservation's segment and reserve nothing. The store model does not
	// see it; the idempotency checker does.
	Resend = "resend"

	// Per-key sequences (SeqService on allocsvr); Space names the space,
	// Keys the keys asked for and Seqs the values answered, one per key.
	SeqNext    = "seq-next"    // NextSeq (one key)
	SeqNexts   = "seq-nexts"   // NextSeqs (repeats allowed)
	SeqCurrent = "seq-current" // CurrentSeqs

	// Decode is AllocService.DecodeSnowflake of a snowflake ID the run
	// was handed (IDs[0]); Decoded is the answer.
	Decode = "decode"
	// Status is AllocService.Status (what Leaf shows on its cache page):
	// no checker reads its answer; Progress wants one answered.
	Status = "status"
)

// Serving paths: how an operation reached its server (Op.Path). Each
// path runs different server code in front of the shared core, so every
// scenario's load takes all of them.
const (
	// PathH2 is connect-go over HTTP/2 (h2 by ALPN; in the plain mode
	// the harness's own client speaks HTTP/1.1): net/http and the
	// connect-go handlers. Ops recorded before paths existed have no Path
	// and count as this one.
	PathH2 = "connect-h2"
	// PathH1 is the Connect protocol with the binary codec over HTTP/1.1
	// keep-alive (TLS with ALPN http/1.1 in the secure mode): the front
	// (internal/h1) answers its routes, and hands the rest to net/http.
	PathH1 = "connect-h1"
	// PathLeafH1 and PathLeafH2 are the Leaf GETs (segment, snowflake,
	// per-key next and current), over HTTP/1.1, where the front answers
	// the segment and per-key next GETs, and over HTTP/2, where net/http's
	// Leaf routes do.
	PathLeafH1 = "leaf-h1"
	PathLeafH2 = "leaf-h2"
	// PathClientH2 and PathClientH1 are the Go client (package client)
	// with a local buffer, whose refills are NextIDRanges calls, over
	// HTTP/2 and over HTTP/1.1 (the front's NextIDRanges and NextSeq
	// routes).
	PathClientH2 = "client-h2"
	PathClientH1 = "client-h1"
)

// Paths lists every serving path, in the order of the reports.
var Paths = []string{PathH2, PathH1, PathLeafH1, PathLeafH2, PathClientH2, PathClientH1}

// Decoded is a DecodeSnowflake answer.
type Decoded struct {
	TimestampMs int64 `json:"timestamp_ms"`
	Worker      int64 `json:"worker_id"`
	Sequence    int64 `json:"sequence"`
}

// Codes of the failures that are answers: the store gives them only from
// its committed state (a tag absent or present), so such a call is an
// observation that took effect, not an unknown outcome.
const (
	CodeNotFound      = "not_found"
	CodeAlreadyExists = "already_exists"
)

// Op is one client call.
type Op struct {
	ID     int64  `json:"id"`
	Client int    `json:"client"` // worker number; porcupine's ClientId
	Kind   string `json:"kind"`
	Target string `json:"target"` // process name, e.g. "s2" or "a1"
	// Path is the serving path the call took (PathH2, ...; empty in
	// histories from before paths: PathH2).
	Path string `json:"path,omitempty"`
	// Life numbers the target's process lifetime at call and at return
	// (Proc.Starts); Pid is its pid at call.
	Life       int `json:"life"`
	LifeReturn int `json:"life_return"`
	Pid        int `json:"pid"`

	Tag       string `json:"tag,omitempty"`
	Size      int64  `json:"size,omitempty"`
	Count     int    `json:"count,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Across says what a Resend was aimed across: "" (right after),
	// "later", "leader-change", "snapshot".
	Across string `json:"across,omitempty"`
	// Start and Step are CreateTag's start and step, or UpdateTag's step
	// (0: unchanged).
	Start int64 `json:"start,omitempty"`
	Step  int64 `json:"step,omitempty"`

	// Call and Return are nanoseconds since the run started (monotonic).
	Call   int64 `json:"call"`
	Return int64 `json:"return"`

	OK   bool   `json:"ok"`
	Code string `json:"code,omitempty"` // Connect code on error
	Err  string `json:"err,omitempty"`

	First int64   `json:"first,omitempty"`
	Last  int64   `json:"last,omitempty"`
	MaxID int64   `json:"max_id,omitempty"`
	IDs   []int64 `json:"ids,omitempty"`
	// Space, Keys and Seqs are a per-key sequence call's space, keys and
	// answered values (Seqs[i] for Keys[i]).
	Space string   `json:"space,omitempty"`
	Keys  []uint64 `json:"keys,omitempty"`
	Seqs  []int64  `json:"seqs,omitempty"`
	// TagStep is the step in the answer (a Tag, or a Segment answered
	// by its first issue); 0 when not recorded.
	TagStep int64 `json:"tag_step,omitempty"`
	// Decoded is a Decode op's answer.
	Decoded *Decoded `json:"decoded,omitempty"`
	// RoutingVersion is the routing_version a per-key Connect call (not
	// a Leaf GET, which does not carry it) answered.
	RoutingVersion uint64 `json:"routing_version,omitempty"`

	// The store reads (reads.go): a listing's names and page count, a
	// GetSpace or a GetRouting answer.
	Names     []string   `json:"names,omitempty"`
	Pages     int        `json:"pages,omitempty"`
	SpaceInfo *SpaceInfo `json:"space_info,omitempty"`
	Routing   *Routing   `json:"routing,omitempty"`
	// URL, Method, HTTPStatus and Allow are a LeafMethod call's; Body is
	// its answer's text, trimmed (empty in histories from before it was
	// recorded): a starting process answers 503 "starting".
	URL        string `json:"url,omitempty"`
	Method     string `json:"method,omitempty"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Allow      string `json:"allow,omitempty"`
	Body       string `json:"body,omitempty"`

	// Resolved marks a reservation whose outcome was unknown (error or
	// timeout) and was learned after the run by re-issuing its request_id;
	// Return is then the re-issue's return.
	Resolved bool `json:"resolved,omitempty"`
	// OutcomeUnknown makes a checker take op as a write of unknown
	// outcome whatever it answered: set by a checker on its own copy (an
	// answer that came from a later cluster than the one it was sent
	// to), never recorded.
	OutcomeUnknown bool `json:"-"`
	// Unresolved marks one whose outcome stayed unknown.
	Unresolved bool `json:"unresolved,omitempty"`
	// NotSent marks a call that failed to connect (a dial error in this
	// process): no byte of it left the client, so it cannot have taken
	// effect and needs no resolving.
	NotSent bool `json:"not_sent,omitempty"`
	// Refused marks a call the store refused before proposing anything
	// (no leader known, not the leader, a forward that failed to
	// connect): like NotSent, it cannot have taken effect.
	Refused bool `json:"refused,omitempty"`
}

// Answered reports whether op failed with an answer about the committed
// state (not_found, already_exists) rather than an unknown outcome.
func (op *Op) Answered() bool {
	return !op.OK && (op.Code == CodeNotFound || op.Code == CodeAlreadyExists)
}

// NoEffect reports whether op failed in a way that proves it changed
// nothing: it never left the client, or the store refused it.
func (op *Op) NoEffect() bool { return !op.OK && (op.NotSent || op.Refused) }

// Open reports whether op is a tag write (create, update, delete) whose
// outcome is unknown: it failed, may have taken effect, and was not
// answered. Tag writes carry no idempotency key, so nothing can resolve
// them.
func (op *Op) Open() bool {
	write := op.Kind == Create || op.Kind == Update || op.Kind == Delete
	return write && !op.OK && !op.NoEffect() && !op.Answered()
}

// SeqIncrements reports whether op is a NextSeq or NextSeqs: each
// occurrence of a key in it takes that key's next value.
func (op *Op) SeqIncrements() bool { return op.Kind == SeqNext || op.Kind == SeqNexts }

// PathOf is op's serving path, PathH2 for a history from before paths.
func (op *Op) PathOf() string {
	if op.Path == "" {
		return PathH2
	}
	return op.Path
}

// Recorder collects operations from many goroutines.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []*Op
	next  int64
}

// NewRecorder starts the run clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Start is the wall time the run clock started.
func (r *Recorder) Start() time.Time { return r.start }

// Now is the run clock: monotonic nanoseconds since NewRecorder.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records op (its ID is assigned here) and returns it.
func (r *Recorder) Add(op *Op) *Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	op.ID = r.next
	r.ops = append(r.ops, op)
	return op
}

// Ops is a snapshot of the history ordered by call time.
func (r *Recorder) Ops() []*Op {
	r.mu.Lock()
	out := append([]*Op{}, r.ops...)
	r.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// WriteJSONL writes one op per line.
func WriteJSONL(path string, ops []*Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadJSONL reads a history written by WriteJSONL.
func ReadJSONL(path string) ([]*Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ops []*Op
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		op := &Op{}
		if err := dec.Decode(op); err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}
