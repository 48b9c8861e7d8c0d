// Package alloc is the allocsvr's service layer over the ID sources in its
// subpackages: segment (Leaf-segment double buffers refilled from the
// store), snowflake (IDs under a worker ID leased in the store), seq
// (per-key sequences over sections leased in the store, with its own
// SeqService handler) and storeclient (the store cluster's client).
//
// alloc itself holds the connect-go AllocService handler (Service) and
// Meituan Leaf's HTTP API (LeafRoutes, with the per-key GETs over a
// SeqSource), registered once each with their HTTP/1.1 front routes where
// they have one (Routes, a routes.Table).
// Guarantees:
//
//   - Every request is checked (spec.CheckTag, spec.CheckCount) before it
//     reaches a source, so a bad request never reserves or burns an ID.
//   - Errors are mapped once, through errs: a handler returns
//     errs.Connect(err), the Leaf API answers errs.HTTPStatus(err) with
//     errs.Message(err), so both protocols give the same failure the same
//     code and no internal detail reaches a client.
//   - The front's answers are the bytes net/http and connect-go would send
//     for the same request; what it does not handle it declines to them.
package alloc
