package storage

import (
	"context"
	"net"
	"testing"

	"github.com/hashicorp/raft"
)

func TestRaftAddrLive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := raft.ServerAddress(ln.Addr().String())
	if !raftAddrLive(context.Background(), addr) {
		t.Fatal("a listening address reported dead")
	}
	ln.Close()
	if raftAddrLive(context.Background(), addr) {
		t.Fatal("a closed address reported live")
	}
}
