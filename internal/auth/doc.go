// Package auth is seqsvr's access control: bearer tokens with roles, read
// from an auth file, checked on every API call.
//
// Guarantees:
//   - Every procedure a server answers has a minimum role, declared once
//     with its handler (package routes) and put in force with SetRoles;
//     a procedure missing from the roles in force is refused to every
//     token (Check), and a test fails for any RPC without a role.
//   - Roles are ordered: metrics < client < alloc < admin; a token holding
//     a role may call everything the lower roles may. metrics (a
//     scraper's token) calls nothing: it only shows /metrics whole.
//   - PathRole says, from a request's path alone, the role it needs, the
//     one rule for net/http's gate and the HTTP/1.1 front, so a server
//     checks the token on the headers and refuses before reading any of
//     the body. The Leaf API is every path under LeafPrefix.
//   - A missing or unknown token is errs.Unauthenticated; a known token
//     whose roles do not reach the procedure's is errs.PermissionDenied.
//   - A token is compared against every listed token by its SHA-256 in
//     constant time (crypto/subtle), without an early exit, so the time of
//     a check says nothing about which token, or how much of one, matched.
//   - The token list is swapped atomically (Reload): a check sees the old
//     list or the new one, never a mix; a file that does not load leaves
//     the old list in force. ReloadIfChanged reloads only a file whose
//     contents changed, so a server can look every second and a rotated
//     file needs no signal; TokenFile does the same for a client's token.
//   - grpc.health.v1 is open, like /healthz and /readyz (load balancers
//     probe without tokens); gRPC reflection needs role client.
package auth
