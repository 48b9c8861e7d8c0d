// Package client is the Go client of seqsvr's allocsvrs: segment IDs,
// snowflake IDs and per-key sequences, with balancing, failover and an
// optional local ID buffer.
//
//	c, err := client.New([]string{"https://10.0.0.7:8080", "https://10.0.0.8:8080"},
//		client.WithToken(token), client.WithCAFile("ca.pem"))
//	if err != nil { ... }
//	defer c.Close()
//	id, err := c.NextID(ctx, "order")
//
// Make one Client per process and share it: it is safe for concurrent
// use, and its connections, endpoint health, buffers and routing tables
// are worth keeping.
//
// # Balancing and failover
//
// Calls go round-robin over the configured endpoints that are healthy.
// An endpoint that fails with a transport error (refused, reset, timed
// out) or answers unavailable is ejected for 100 ms, doubling with each
// failure in a row up to 5 s; the call moves on to the next endpoint at
// once. When every endpoint has failed once in a call, the call waits a
// short backoff (20 ms, doubling, at most 500 ms, jittered) and tries them again,
// ejected ones included, until it succeeds or its context ends. So a call
// fails only when its context ends (deadline_exceeded or canceled,
// naming the last failure) or when a server gives an answer no other
// endpoint would change (invalid_argument, not_found, unauthenticated,
// permission_denied, resource_exhausted). A context without a deadline
// gets WithTimeout's (10 s); one attempt on one endpoint gets at most
// WithAttemptTimeout (3 s), so a hung server costs that much, once.
//
// # What is retried, and why that is safe
//
// Every call this package makes is retried, because each is safe to
// repeat: an attempt whose answer was lost (the server died after
// taking IDs, say) at worst leaves a gap. A retried NextIDs or
// NextSnowflakeIDs returns IDs no one else ever gets (the servers
// never hand out an ID twice, guarantee 1 of the contract); a retried
// NextSeqs returns values above the lost ones (guarantee 8: a key's
// values only grow); CurrentSeqs, Routing and DecodeSnowflake change
// nothing. Gaps are the price: IDs and sequence values are unique and
// increasing, never dense. Snowflake calls also skip an allocsvr whose
// worker lease is lost (failed_precondition).
//
// # Local buffer
//
// WithLocalBuffer(size) keeps, per tag, two batches of segment IDs in the
// process: NextID takes the next one from memory (an atomic add, no lock,
// no network), and when 10% of the current batch is used the next batch
// is loaded in the background with one NextIDRanges(size) call (size up
// to MaxLocalBuffer). Its answer is a few ranges of consecutive IDs
// (usually one; one per segment it spans), kept as ranges: a batch costs
// a few words whatever its size, and neither side does work per ID. An
// allocsvr from before NextIDRanges answers it unimplemented; loads then
// use NextIDs for a minute (ceil(size/MaxCount) calls on one allocsvr, at
// most 8 in flight) before NextIDRanges is tried again, so a rolling
// upgrade needs no configuration. A caller waits for the network only
// when both batches are used up.
//
// One client's IDs of a tag are unique and strictly increasing in the
// order a goroutine gets them: loads stay on one allocsvr while it works,
// and after a failover IDs not above every ID already loaded are dropped
// (the new allocsvr's segment may be behind the old one's). A batch may
// therefore hold fewer than size IDs; so may one loaded with NextIDs when
// some of its calls failed after their retries (the IDs the others got are
// reserved either way, and dropping them would only burn them). Nothing
// depends on a batch's length: the refill starts 10% into whatever was
// installed, and the load fails only when it gets no ID at all.
//
// What it gives up:
//   - IDs loaded but not handed out when the process exits (or Close is
//     called) are lost: up to 2*size per tag. They are never handed to
//     anyone else, so nothing is duplicated, but the tag's IDs get gaps.
//   - Across processes IDs are only trend-increasing: two clients each
//     hold their own range, so an ID from one can be below an earlier ID
//     from the other, by up to the tags' segment sizes.
//   - An ID may be handed out long after it was reserved; anything that
//     reads time order into IDs sees the reservation time.
//   - Errors show late: a deleted tag keeps serving its buffered IDs.
//
// # Per-key sequences
//
// NextSeq, NextSeqs and CurrentSeqs send each key straight to the
// allocsvr that owns its section, from a cached copy of the space's
// routing table (seqsvr's client-side routing), so no call is forwarded
// between allocsvrs. Every answer carries the routing_version the server
// knows; a newer one than the cached table's refreshes the table in the
// background. Until the first refresh, and whenever an owner is
// unreachable, a call goes to any configured endpoint, which forwards it
// to the owner. Owners' URLs come from the table (allocsvr
// --advertise-url) and need not be among the configured endpoints.
//
// # Errors
//
// Errors are *connect.Error values; Code (or connect.CodeOf) gives the
// Connect code: invalid_argument (a bad tag or space name, count or key
// list out of range: checked here before any call where possible),
// not_found (unknown tag or space), unauthenticated and
// permission_denied (token), resource_exhausted (a tag's ID space is
// used up), failed_precondition (no allocsvr has a snowflake worker
// lease), deadline_exceeded and canceled (the caller's context ended
// first; the message names the last failure). ErrClosed follows Close.
//
// # Protocols and security
//
// Calls speak the Connect protocol with binary protobuf by default
// (HTTP/1.1 or HTTP/2); WithProtocol(ProtocolGRPC) speaks gRPC. WithToken
// sends the bearer token servers started with --auth-file want (role
// client); WithCAFile or WithTLSConfig set the trust for https:// endpoints.
package client
