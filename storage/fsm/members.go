package fsm

import seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"

// Members' HTTP addresses live in the FSM so every member can forward to
// whoever leads, including members that joined later.

func (st *fsmState) applySetMember(c *seqsvrv1.SetMemberCommand) Result {
	st.members[c.GetId()] = &seqsvrv1.MemberInfo{Id: c.GetId(), RaftAddr: c.GetRaftAddr(), HttpAddr: c.GetHttpAddr()}
	return Result{}
}

func (st *fsmState) applyRemoveMember(c *seqsvrv1.RemoveMemberCommand) Result {
	delete(st.members, c.GetId())
	return Result{}
}
