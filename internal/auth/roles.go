package auth

import "fmt"

// Role is a token's permission level. Higher roles include lower ones.
type Role int

// The roles of the contract. Open marks what needs no token at all.
const (
	Open    Role = iota // no token needed
	Metrics             // /metrics with its tag and space names (a scraper's token), nothing else
	Client              // AllocService, SeqService, the Leaf API, the store's reads
	Alloc               // also what an allocsvr needs from the store
	Admin               // everything
)

var roleNames = map[string]Role{"metrics": Metrics, "client": Client, "alloc": Alloc, "admin": Admin}

func (r Role) String() string {
	switch r {
	case Open:
		return "open"
	case Metrics:
		return "metrics"
	case Client:
		return "client"
	case Alloc:
		return "alloc"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// ParseRole reads a role name of the auth file.
func ParseRole(s string) (Role, error) {
	r, ok := roleNames[s]
	if !ok {
		return 0, fmt.Errorf("unknown role %q (want metrics, client, alloc or admin)", s)
	}
	return r, nil
}

// Roles is the least role of each procedure a server answers
// ("/pkg.Service/Method"). It is not written here: each procedure
// declares its role once, with its handler (routes.Unary, routes.Table's
// Roles), and the server adds the health and reflection services it
// mounts itself; Authorizer.SetRoles puts the result in force. A
// procedure missing from it is refused to every token (Required).
type Roles map[string]Role

// LeafRole is the role of the Leaf-style HTTP API: every path under
// LeafPrefix.
const LeafRole = Client

// LeafPrefix is where the Leaf-style HTTP API lives: every path under it
// needs LeafRole, and a refusal there is answered as the Leaf API answers
// errors (one line of text).
const LeafPrefix = "/api/"

// noRole is above every role a token can hold: a procedure missing from
// the table is refused.
const noRole = Admin + 1

// Required is the minimum role of procedure ("/pkg.Service/Method"): its
// role in rs, or one no token holds.
func (rs Roles) Required(procedure string) Role {
	if r, ok := rs[procedure]; ok {
		return r
	}
	return noRole
}
