package storage

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/version"
	"github.com/seqsvr/seqsvr/storage/backup"
)

// backupChunkSize is the most bytes one BackupChunk carries.
const backupChunkSize = 1 << 20

// Backup streams the backup file taken on the leader. A follower relays
// the leader's stream (forwarded once, with the caller's token, as the
// unary calls are).
func (h *service) Backup(ctx context.Context, req *connect.Request[seqsvrv1.BackupRequest], out *connect.ServerStream[seqsvrv1.BackupChunk]) error {
	file, err := h.s.backupFile(ctx)
	if errors.Is(err, ErrNotLeader) && req.Header().Get(ForwardedHeader) == "" {
		if err := h.s.relayBackup(ctx, req, out); err != nil {
			return errs.Connect(err)
		}
		h.s.backupAnswered()
		return nil
	}
	if err != nil {
		return errs.Connect(err)
	}
	for len(file) > 0 {
		n := min(len(file), backupChunkSize)
		if err := out.Send(&seqsvrv1.BackupChunk{Data: file[:n]}); err != nil {
			return err
		}
		file = file[n:]
	}
	h.s.backupAnswered()
	return nil
}

// backupAnswered tells Config.OnBackup that this member answered a whole
// backup: the time of the last one is a metric, and its age an alert.
func (s *Store) backupAnswered() {
	if s.cfg.OnBackup != nil {
		s.cfg.OnBackup(s.cfg.Clock.Now())
	}
}

// backupFile is a consistent copy of the state as a backup file: taken
// under the state machine's lock, on the leader, after its term's barrier
// and a VerifyLeader round, so it holds every write answered before the
// call began.
func (s *Store) backupFile(ctx context.Context) ([]byte, error) {
	if err := s.linearize(ctx); err != nil {
		return nil, err
	}
	st := s.fsm.State()
	// The request_id record is left out: a restored cluster starts
	// without one (retries then get fresh, jumped segments).
	st.Requests = nil
	b := &seqsvrv1.Backup{
		ClusterId: st.GetClusterId(), RaftIndex: st.GetLastIndex(), RaftTerm: st.GetLastTerm(),
		LeaderTimeMs: s.cfg.Clock.Now().UnixMilli(), LeaderId: s.cfg.NodeID, StoreVersion: version.String(),
		MaxSegmentSize: s.cfg.MaxSegmentSize, WorkerLeaseTtlMs: s.cfg.WorkerLeaseTTL.Milliseconds(), SeqLeaseTtlMs: s.cfg.SeqLeaseTTL.Milliseconds(),
		State: st, Generation: st.GetGeneration(),
	}
	file, err := backup.Encode(b)
	if err != nil {
		return nil, err
	}
	s.log.Info("backup taken", "cluster_id", b.GetClusterId(), "generation", b.GetGeneration(), "raft_index", b.GetRaftIndex(), "bytes", len(file), "tags", len(st.GetTags()))
	return file, nil
}

// relayBackup passes the leader's backup stream on to the caller.
func (s *Store) relayBackup(ctx context.Context, req *connect.Request[seqsvrv1.BackupRequest], out *connect.ServerStream[seqsvrv1.BackupChunk]) error {
	c, err := s.leaderClient()
	if err != nil {
		return err
	}
	fwd := connect.NewRequest(req.Msg)
	fwd.Header().Set(ForwardedHeader, "1")
	if a := req.Header().Get("Authorization"); a != "" {
		fwd.Header().Set("Authorization", a)
	}
	stream, err := c.Backup(ctx, fwd)
	if err != nil {
		return err
	}
	defer stream.Close()
	for stream.Receive() {
		if err := out.Send(stream.Msg()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return fmt.Errorf("relaying the leader's backup: %w", err)
	}
	return nil
}
