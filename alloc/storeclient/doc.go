// Package storeclient is the allocsvr's client of the store cluster.
//
// It finds the store's Raft leader from any list of members, follows
// leader changes and retries transport and unavailable errors with backoff
// within the caller's deadline (or Options.RetryBudget when the context has
// none). Every other answer is returned at once, mapped by errs.FromConnect:
// the store's *connect.Error stays reachable with errors.As and its kind
// with errors.Is. A reservation keeps one request_id across its retries, so
// a retry after a timeout returns the same segment instead of burning a new
// one.
//
// Which cluster it follows: every store member is asked at once who leads
// (and Survey asks them all again whenever the caller wants, every 2 s in
// the allocsvr), and the client follows the highest (generation, cluster
// ID) among the answers, not the first that came. It never goes to a
// cluster of another ID whose generation is not higher than the followed
// one's: a restore or recovery gives the new cluster a higher generation,
// so old members brought back after it, and a store rebuilt empty by
// mistake (a new ID at generation 0), are refused (FencedStores) and calls
// fail as unavailable while only they answer. With Options.DataDir the
// followed cluster is written down (durably) before it is used, so a
// restart refuses the same clusters. What it cannot see: a call other
// than ClusterStatus carries no identity, so an old member that comes up
// at the leader's own address is noticed at the next survey or failure.
//
// Unless Options.HTTPClient is given, calls go over the package's own
// HTTP/1.1 keep-alive client (h1client.go), which writes and reads each
// call on the caller's goroutine and keeps one connection per concurrent
// call (up to MaxIdleConnsPerHost per member); over https it dials with
// the current pool of a tlsconf CA file, so a rotated CA needs no restart.
package storeclient
