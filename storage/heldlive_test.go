package storage

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// runningProbe answers MemberProbe as a member running Raft.
type runningProbe struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	id string
}

func (p runningProbe) MemberProbe(context.Context, *connect.Request[seqsvrv1.MemberProbeRequest]) (*connect.Response[seqsvrv1.MemberProbeResponse], error) {
	return connect.NewResponse(&seqsvrv1.MemberProbeResponse{NodeId: p.id, Phase: phaseRunning, ClusterExists: true}), nil
}

// A member that lost its disk asks to be taken back at its own Raft
// address, where its transport already listens while it waits: the
// leader must tell it from a live holder by asking the process there,
// over real TCP and HTTP, not by a dial that always succeeds.
func TestHeldLiveAtTheAskersOwnAddress(t *testing.T) {
	raftLn, err := net.Listen("tcp", "127.0.0.1:0") // the asker's Raft transport
	if err != nil {
		t.Fatal(err)
	}
	defer raftLn.Close()
	go func() {
		for {
			c, err := raftLn.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	serve := func(h seqsvrv1connect.StoreServiceHandler) *httptest.Server {
		mux := http.NewServeMux()
		mux.Handle(seqsvrv1connect.NewStoreServiceHandler(h))
		srv := httptest.NewUnstartedServer(mux)
		srv.EnableHTTP2 = true
		srv.Start()
		t.Cleanup(srv.Close)
		return srv
	}
	waiting := serve(&waitingService{id: "n2", why: func() string { return "asking" }})
	running := serve(runningProbe{id: "n2"})

	ctx := context.Background()
	held := raft.Server{ID: "n2", Address: raft.ServerAddress(raftLn.Addr().String())}
	ask := func(httpURL string) (bool, error) {
		addr := strings.TrimPrefix(httpURL, "http://")
		s := &Store{cfg: Config{NodeID: "n1", HTTPClient: http.DefaultClient, HTTPScheme: "http", Peers: []Peer{{ID: "n2", HTTPAddr: addr}}}, fsm: fsm.New(nil)}
		return s.heldLive(ctx, held, &seqsvrv1.AddMemberRequest{Id: "n2", RaftAddr: string(held.Address), HttpAddr: addr, Replace: true})
	}
	if live, err := ask(waiting.URL); err != nil || live {
		t.Errorf("the asker itself, waiting at the entry's address: live %v, err %v; want not live", live, err)
	}
	if live, err := ask(running.URL); err != nil || !live {
		t.Errorf("a member running Raft at the entry's address: live %v, err %v; want live", live, err)
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	if _, err := ask(gone.URL); !errors.Is(err, errs.Unavailable) {
		t.Errorf("nobody answering the probe: err %v, want unavailable (the asker retries)", err)
	}
	// Another address: whatever accepts at the entry's is its holder.
	moved := &seqsvrv1.AddMemberRequest{Id: "n2", RaftAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2", Replace: true}
	s := &Store{cfg: Config{NodeID: "n1", HTTPClient: http.DefaultClient, HTTPScheme: "http"}, fsm: fsm.New(nil)}
	if live, err := s.heldLive(ctx, held, moved); err != nil || !live {
		t.Errorf("a holder accepting at its old address: live %v, err %v; want live", live, err)
	}
	raftLn.Close()
	if live, err := ask(waiting.URL); err != nil || live {
		t.Errorf("nothing at the entry's address: live %v, err %v; want not live", live, err)
	}
}
