package fsm

// Generation orders clusters that descend from one another: 0 for a
// cluster bootstrapped fresh, and above the lost cluster's for one made by
// a restore or a recovery (recovery.Prepare sets it in the state it
// builds). No Raft command changes it, so it moves only with a snapshot
// (a restore's first one, or one a leader sends); allocsvrs compare it,
// with the cluster ID, to refuse a cluster older than the one they follow.
func (f *Machine) Generation() (g int64) {
	f.read(func(st *fsmState) { g = st.generation })
	return g
}
