package storeclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/storage"
)

// swappedMember is a store member at an address the client follows: its
// ClusterStatus names the followed cluster (answered before an old member
// took the address over, or by the followed cluster's members about it)
// and names leader as leading, while its writes are the old member's: a
// write naming another cluster is refused as the store refuses it, and
// one naming none is answered from the old cluster's state.
type swappedMember struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	followed, own Identity
	leader        *string // URL of the member named as leader
	first         int64   // first ID of the segments it answers

	mu       sync.Mutex
	reserves int
	named    []string // the cluster_id of each ReserveSegment
}

func (m *swappedMember) ClusterStatus(context.Context, *connect.Request[seqsvrv1.ClusterStatusRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return connect.NewResponse(&seqsvrv1.ClusterStatusResponse{ClusterId: m.followed.ClusterID, Generation: m.followed.Generation,
		LeaderId: "leader", LeaderHttpAddr: *m.leader}), nil
}

func (m *swappedMember) ReserveSegment(_ context.Context, req *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserves++
	m.named = append(m.named, req.Msg.GetClusterId())
	if want := req.Msg.GetClusterId(); want != "" && want != m.own.ClusterID {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("%s: this member belongs to cluster %s (generation %d), the caller follows cluster %s",
			callerClusterText, m.own.ClusterID, m.own.Generation, want))
	}
	return connect.NewResponse(&seqsvrv1.Segment{Tag: req.Msg.GetTag(), First: m.first, Last: m.first + req.Msg.GetSize() - 1}), nil
}

// become makes the member one of cluster id, on ClusterStatus and writes.
func (m *swappedMember) become(id Identity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.followed, m.own = id, id
}

func (m *swappedMember) counts() (int, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserves, append([]string(nil), m.named...)
}

func serveMember(t *testing.T, m *swappedMember) string {
	mux := http.NewServeMux()
	mux.Handle(seqsvrv1connect.NewStoreServiceHandler(m))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A member whose ClusterStatus names the followed cluster but which
// refuses a write as another cluster is fenced like a member whose
// ClusterStatus names that cluster: the write goes on to another member,
// the refusing one gets no other, and it is listed among the fenced.
func TestClientFencesMemberRefusingWrites(t *testing.T) {
	followed := Identity{restoredAt, "restored"}
	old := Identity{0, "old"}
	var leaderURL string
	swapped := &swappedMember{followed: followed, own: old, leader: &leaderURL, first: 1}
	good := &swappedMember{followed: followed, own: followed, leader: &leaderURL, first: 5001}
	leaderURL = serveMember(t, swapped)
	goodURL := serveMember(t, good)
	c := testClient(t, []string{leaderURL, goodURL})

	for i := range 2 {
		s, err := c.ReserveSegment(testCtx(t), "t", 5, fmt.Sprint("r", i))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if s.GetFirst() != good.first {
			t.Fatalf("call %d: segment %v, want the followed cluster's (first %d): answered by the old member", i, s, good.first)
		}
	}
	if n, named := swapped.counts(); n != 1 || named[0] != followed.ClusterID {
		t.Fatalf("the refusing member got %d ReserveSegment(s) naming %q, want 1 naming %q", n, named, followed.ClusterID)
	}
	if _, named := good.counts(); len(named) != 2 || named[0] != followed.ClusterID || named[1] != followed.ClusterID {
		t.Fatalf("the followed cluster's member got writes naming %q, want %q each", named, followed.ClusterID)
	}
	if f := c.FencedStores(); len(f) != 1 || f[0].URL != leaderURL || f[0].Identity != old {
		t.Fatalf("fenced %v, want %s as %v", f, leaderURL, old)
	}
	if c.FencedAnswers() == 0 {
		t.Fatal("the refusal was not counted among the fenced answers")
	}
	if got := c.Followed(); got != followed {
		t.Fatalf("following %v, want %v", got, followed)
	}
}

// A member restored as a newer cluster where the followed one stood
// refuses a write naming the old cluster: the client follows the newer
// cluster and retries there, and does not fence it.
func TestClientFollowsNewerClusterRefusingWrites(t *testing.T) {
	old, restored := Identity{0, "old"}, Identity{restoredAt, "restored"}
	var leaderURL string
	m := &swappedMember{followed: old, own: old, leader: &leaderURL, first: 1}
	leaderURL = serveMember(t, m)
	c := testClient(t, []string{leaderURL})
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r0"); err != nil {
		t.Fatal(err)
	}
	m.become(restored)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.ReserveSegment(ctx, "t", 5, "r1"); err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	if _, named := m.counts(); len(named) != 3 || named[0] != old.ClusterID || named[1] != old.ClusterID || named[2] != restored.ClusterID {
		t.Fatalf("writes named %q, want old, old (refused), then restored", named)
	}
	if got, f := c.Followed(), c.FencedStores(); got != restored || len(f) != 0 {
		t.Fatalf("following %v, fenced %v; want %v and none", got, f, restored)
	}
}

// The store's refusal begins with the text the client recognises.
func TestCallerClusterTextIsTheStores(t *testing.T) {
	if got := storage.ErrCallerCluster.Error(); got != callerClusterText {
		t.Fatalf("storage.ErrCallerCluster is %q, the client recognises %q", got, callerClusterText)
	}
	err := connect.NewError(connect.CodeFailedPrecondition, errors.New(callerClusterText+": this member belongs to cluster abc (generation 7), the caller follows cluster def"))
	if id, ok := refusedAs(err); !ok || id != (Identity{7, "abc"}) {
		t.Fatalf("refusedAs: %v %v", id, ok)
	}
	if _, ok := refusedAs(connect.NewError(connect.CodeFailedPrecondition, errors.New("worker lease lost"))); ok {
		t.Fatal("another failed_precondition taken as a refusal")
	}
}
