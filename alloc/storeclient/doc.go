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
// Unless Options.HTTPClient is given, calls go over the package's own
// HTTP/1.1 keep-alive client (h1client.go), which writes and reads each
// call on the caller's goroutine and keeps one connection per concurrent
// call (up to MaxIdleConnsPerHost per member); over https it dials with
// the current pool of a tlsconf CA file, so a rotated CA needs no restart.
package storeclient
