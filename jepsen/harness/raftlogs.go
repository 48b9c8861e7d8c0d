package harness

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/jepsen/checker"
)

// compareRaftLogs reads the raft.db copies keepRaftData made in dir
// (NAME.db per member) and compares them entry by entry from the highest
// first index to the lowest of applied and the last indexes, each index
// across the members that hold it (see checker.RaftLogs).
func compareRaftLogs(dir string, names []string, applied uint64) *checker.RaftLogs {
	out := &checker.RaftLogs{Members: names}
	var stores []*raftboltdb.BoltStore
	defer func() {
		for _, s := range stores {
			_ = s.Close()
		}
	}()
	var firsts, lasts []uint64
	for _, n := range names {
		s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, n+".db"), BoltOptions: &bbolt.Options{ReadOnly: true}})
		if err != nil {
			out.Err = fmt.Sprintf("%s: %v", n, err)
			return out
		}
		stores = append(stores, s)
		f, err1 := s.FirstIndex()
		l, err2 := s.LastIndex()
		if err1 != nil || err2 != nil {
			out.Err = fmt.Sprintf("%s: first/last index: %v %v", n, err1, err2)
			return out
		}
		firsts, lasts = append(firsts, f), append(lasts, l)
	}
	if len(stores) == 0 {
		out.Err = "no member"
		return out
	}
	out.From, out.To = slices.Max(firsts), min(slices.Min(lasts), applied)
	for i := out.From; i <= out.To && out.From > 0; i++ {
		var held []raft.Log
		var holders []string
		for k, s := range stores {
			var e raft.Log
			switch err := s.GetLog(i, &e); {
			case errors.Is(err, raft.ErrLogNotFound):
				if out.Missing == nil {
					out.Missing = map[string]uint64{}
				}
				out.Missing[names[k]]++
				continue
			case err != nil:
				out.Err = fmt.Sprintf("%s: entry %d: %v", names[k], i, err)
				return out
			}
			held, holders = append(held, e), append(holders, names[k])
		}
		if len(held) < 2 {
			continue
		}
		out.Compared++
		same := true
		for _, e := range held[1:] {
			same = same && e.Term == held[0].Term && e.Type == held[0].Type && bytes.Equal(e.Data, held[0].Data)
		}
		if same {
			continue
		}
		out.Diffs++
		if out.Diff == "" {
			var d []string
			for k, e := range held {
				d = append(d, fmt.Sprintf("%s: term %d %s", holders[k], e.Term, describeEntry(e)))
			}
			out.Diff = fmt.Sprintf("index %d: %s", i, strings.Join(d, "; "))
		}
	}
	return out
}

// describeEntry names a raft entry's type, and a command's kind and, for
// a reservation, its tag and request_id.
func describeEntry(e raft.Log) string {
	if e.Type != raft.LogCommand {
		return e.Type.String()
	}
	var c seqsvrv1.Command
	if err := proto.Unmarshal(e.Data, &c); err != nil {
		return "undecodable command"
	}
	if r := c.GetReserveSegment(); r != nil {
		return fmt.Sprintf("ReserveSegment %s size %d request_id %q", r.GetTag(), r.GetSize(), r.GetRequestId())
	}
	return fmt.Sprintf("%T", c.GetCmd())
}
