package fsm

// WorkerIDs is how many snowflake worker IDs are in use at now (Unix ms):
// held under a lease, or expired less than retention ms ago, so that no
// new allocsvr may take them; and how many the layout has. A registration
// beyond the limit fails (ErrWorkersExhausted) until one is reclaimable.
func (f *Machine) WorkerIDs(now, retention int64) (inUse, limit int64) {
	f.read(func(st *fsmState) {
		for _, w := range st.workers {
			if w.GetLeaseExpiresMs()+retention >= now {
				inUse++
			}
		}
		limit = int64(1) << st.layout.GetWorkerBits()
	})
	return inUse, limit
}
