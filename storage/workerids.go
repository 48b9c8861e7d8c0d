package storage

// WorkerIDs is how many snowflake worker IDs this member's state holds in
// use (leased, or expired less than WorkerRetention ago) and how many the
// layout has, as of this member's clock: the worker-ID metrics.
func (s *Store) WorkerIDs() (inUse, limit int64) {
	return s.fsm.WorkerIDs(s.cfg.Clock.Now().UnixMilli(), s.cfg.WorkerRetention.Milliseconds())
}
