package alloc

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/segment"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// SegmentSource is what the service needs from the segment allocator
// (*segment.Allocator in production).
type SegmentSource interface {
	NextIDs(ctx context.Context, tag string, count int) ([]int64, error)
	NextIDRanges(ctx context.Context, tag string, count int) ([]segment.Range, error)
	Status() []*seqsvrv1.TagStatus
}

// SnowflakeSource is what the service needs from the snowflake generator
// (*snowflake.Service in production).
type SnowflakeSource interface {
	NextIDs(ctx context.Context, count int) ([]int64, error)
	Decode(id int64) (*seqsvrv1.DecodeSnowflakeResponse, error)
	Status() *seqsvrv1.SnowflakeStatus
}

// Service implements seqsvr.v1.AllocService over a segment allocator and a
// snowflake generator. The snowflake generator may arrive later
// (SetSnowflake): the allocsvr registers its worker in the background so
// segment IDs flow even while the store is down at start. Until then
// snowflake calls answer unavailable with the reason.
//
// Every request is validated before it reaches an allocator, so a request
// that fails validation never reserves or burns an ID.
type Service struct {
	nodeID string
	seg    SegmentSource
	snow   atomic.Pointer[snowState]
	seq    SeqSource // nil while per-key sequences are off
	// storeView fills in the store cluster followed and the stores
	// refused (nil: none known).
	storeView atomic.Pointer[func(*seqsvrv1.StatusResponse)]
}

// SetStoreView makes Status report the store cluster this allocsvr
// follows (cluster_id, cluster_generation) and the store URLs it refuses
// (fenced_stores), as f fills them in.
func (s *Service) SetStoreView(f func(*seqsvrv1.StatusResponse)) { s.storeView.Store(&f) }

type snowState struct {
	src    SnowflakeSource // nil until started
	reason string          // why src is nil
}

var _ seqsvrv1connect.AllocServiceHandler = (*Service)(nil)

// NewService returns the handler. nodeID is reported by Status.
func NewService(nodeID string, seg SegmentSource) *Service {
	s := &Service{nodeID: nodeID, seg: seg}
	s.snow.Store(&snowState{reason: "snowflake worker not registered yet"})
	return s
}

// SetSnowflake makes snowflake IDs available.
func (s *Service) SetSnowflake(src SnowflakeSource) {
	s.snow.Store(&snowState{src: src})
}

// SetSnowflakeReason records why snowflake IDs are not available yet (for
// errors and Status) while no generator is set.
func (s *Service) SetSnowflakeReason(reason string) {
	for {
		old := s.snow.Load()
		if old.src != nil {
			return
		}
		if s.snow.CompareAndSwap(old, &snowState{reason: reason}) {
			return
		}
	}
}

func (s *Service) snowflake() (SnowflakeSource, error) {
	st := s.snow.Load()
	if st.src == nil {
		return nil, fmt.Errorf("%w: %s", errs.Unavailable, st.reason)
	}
	return st.src, nil
}

// segmentIDs validates and serves a segment request; shared by the RPC and
// the Leaf API.
func (s *Service) segmentIDs(ctx context.Context, tag string, count int32) ([]int64, error) {
	if err := spec.CheckTag(tag); err != nil {
		return nil, err
	}
	n, err := spec.CheckCount(count)
	if err != nil {
		return nil, err
	}
	return s.seg.NextIDs(ctx, tag, n)
}

func (s *Service) snowflakeIDs(ctx context.Context, count int32) ([]int64, error) {
	n, err := spec.CheckCount(count)
	if err != nil {
		return nil, err
	}
	src, err := s.snowflake()
	if err != nil {
		return nil, err
	}
	return src.NextIDs(ctx, n)
}

// NextIDs hands out segment-mode IDs for one tag.
func (s *Service) NextIDs(ctx context.Context, req *connect.Request[seqsvrv1.NextIDsRequest]) (*connect.Response[seqsvrv1.NextIDsResponse], error) {
	ids, err := s.segmentIDs(ctx, req.Msg.GetTag(), req.Msg.GetCount())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.NextIDsResponse{Ids: ids}), nil
}

// segmentRanges validates and serves a NextIDRanges request; shared by
// the RPC and the fast route.
func (s *Service) segmentRanges(ctx context.Context, tag string, count int32) (*seqsvrv1.NextIDRangesResponse, error) {
	if err := spec.CheckTag(tag); err != nil {
		return nil, err
	}
	n, err := spec.CheckRangeCount(count)
	if err != nil {
		return nil, err
	}
	rs, err := s.seg.NextIDRanges(ctx, tag, n)
	if err != nil {
		return nil, err
	}
	out := &seqsvrv1.NextIDRangesResponse{Ranges: make([]*seqsvrv1.IDRange, len(rs))}
	for i, r := range rs {
		out.Ranges[i] = &seqsvrv1.IDRange{First: r.First, Last: r.Last}
	}
	return out, nil
}

// NextIDRanges hands out segment-mode IDs for one tag as ranges: the
// same IDs NextIDs would, without a word per ID on the wire.
func (s *Service) NextIDRanges(ctx context.Context, req *connect.Request[seqsvrv1.NextIDRangesRequest]) (*connect.Response[seqsvrv1.NextIDRangesResponse], error) {
	res, err := s.segmentRanges(ctx, req.Msg.GetTag(), req.Msg.GetCount())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(res), nil
}

// NextSnowflakeIDs hands out snowflake IDs; the tag is accepted for Leaf
// compatibility and only checked for form when given.
func (s *Service) NextSnowflakeIDs(ctx context.Context, req *connect.Request[seqsvrv1.NextSnowflakeIDsRequest]) (*connect.Response[seqsvrv1.NextSnowflakeIDsResponse], error) {
	if tag := req.Msg.GetTag(); tag != "" {
		if err := spec.CheckTag(tag); err != nil {
			return nil, errs.Connect(err)
		}
	}
	ids, err := s.snowflakeIDs(ctx, req.Msg.GetCount())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.NextSnowflakeIDsResponse{Ids: ids}), nil
}

// DecodeSnowflake splits an ID into its fields with the cluster's layout.
func (s *Service) DecodeSnowflake(_ context.Context, req *connect.Request[seqsvrv1.DecodeSnowflakeRequest]) (*connect.Response[seqsvrv1.DecodeSnowflakeResponse], error) {
	if req.Msg.GetId() < 0 {
		return nil, errs.Connect(fmt.Errorf("%w: id %d is negative", errs.InvalidArgument, req.Msg.GetId()))
	}
	src, err := s.snowflake()
	if err != nil {
		return nil, errs.Connect(err)
	}
	out, err := src.Decode(req.Msg.GetId())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(out), nil
}

// Status shows the buffers, the snowflake worker and the per-key sequence
// lease, as Leaf's cache page.
func (s *Service) Status(context.Context, *connect.Request[seqsvrv1.StatusRequest]) (*connect.Response[seqsvrv1.StatusResponse], error) {
	out := &seqsvrv1.StatusResponse{NodeId: s.nodeID, Tags: s.seg.Status(), Seq: s.seqStatus(), NowMs: time.Now().UnixMilli()}
	if f := s.storeView.Load(); f != nil {
		(*f)(out)
	}
	if st := s.snow.Load(); st.src != nil {
		out.Snowflake = st.src.Status()
	} else {
		out.Snowflake = &seqsvrv1.SnowflakeStatus{Enabled: false, NodeId: s.nodeID, Reason: st.reason}
	}
	return connect.NewResponse(out), nil
}
