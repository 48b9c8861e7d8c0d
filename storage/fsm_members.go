package storage

import (
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Members' HTTP addresses live in the FSM so every member can forward to
// whoever leads, including members that joined later.

func (st *fsmState) applySetMember(c *seqsvrv1.SetMemberCommand) applyResult {
	st.members[c.GetId()] = &seqsvrv1.MemberInfo{Id: c.GetId(), RaftAddr: c.GetRaftAddr(), HttpAddr: c.GetHttpAddr()}
	return applyResult{}
}

func (st *fsmState) applyRemoveMember(c *seqsvrv1.RemoveMemberCommand) applyResult {
	delete(st.members, c.GetId())
	return applyResult{}
}

func (f *fsm) member(id string) *seqsvrv1.MemberInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if m, ok := f.st.members[id]; ok {
		return proto.Clone(m).(*seqsvrv1.MemberInfo)
	}
	return nil
}
