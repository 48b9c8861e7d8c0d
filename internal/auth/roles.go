package auth

import (
	"fmt"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

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

// Procedures is the minimum role of every RPC, defined once. A procedure
// not listed here is refused to every token (see Required).
var Procedures = map[string]Role{
	// StoreService: reads for clients; what allocsvrs call for alloc;
	// tag, space and membership changes for admins.
	seqsvrv1connect.StoreServiceGetTagProcedure:         Client,
	seqsvrv1connect.StoreServiceListTagsProcedure:       Client,
	seqsvrv1connect.StoreServiceGetSpaceProcedure:       Client,
	seqsvrv1connect.StoreServiceListSpacesProcedure:     Client,
	seqsvrv1connect.StoreServiceClusterStatusProcedure:  Client,
	seqsvrv1connect.StoreServiceMemberProbeProcedure:    Client,
	seqsvrv1connect.StoreServiceReserveSegmentProcedure: Alloc,
	seqsvrv1connect.StoreServiceRegisterWorkerProcedure: Alloc,
	seqsvrv1connect.StoreServiceRenewWorkerProcedure:    Alloc,
	seqsvrv1connect.StoreServiceGetRoutingProcedure:     Alloc,
	seqsvrv1connect.StoreServiceSeqHeartbeatProcedure:   Alloc,
	seqsvrv1connect.StoreServiceRaiseSectionsProcedure:  Alloc,
	seqsvrv1connect.StoreServiceCreateTagProcedure:      Admin,
	seqsvrv1connect.StoreServiceUpdateTagProcedure:      Admin,
	seqsvrv1connect.StoreServiceDeleteTagProcedure:      Admin,
	seqsvrv1connect.StoreServiceAddMemberProcedure:      Admin,
	seqsvrv1connect.StoreServiceRemoveMemberProcedure:   Admin,
	seqsvrv1connect.StoreServiceCreateSpaceProcedure:    Admin,
	seqsvrv1connect.StoreServiceBackupProcedure:         Admin,

	seqsvrv1connect.AllocServiceNextIDsProcedure:          Client,
	seqsvrv1connect.AllocServiceNextIDRangesProcedure:     Client,
	seqsvrv1connect.AllocServiceNextSnowflakeIDsProcedure: Client,
	seqsvrv1connect.AllocServiceDecodeSnowflakeProcedure:  Client,
	seqsvrv1connect.AllocServiceStatusProcedure:           Client,

	// SeqService: also what allocsvrs forward to each other, with the
	// forwarding allocsvr's store token (role alloc), which includes client.
	seqsvrv1connect.SeqServiceNextSeqProcedure:     Client,
	seqsvrv1connect.SeqServiceNextSeqsProcedure:    Client,
	seqsvrv1connect.SeqServiceCurrentSeqsProcedure: Client,
	seqsvrv1connect.SeqServiceRoutingProcedure:     Client,

	"/grpc.health.v1.Health/Check":                                   Open,
	"/grpc.health.v1.Health/Watch":                                   Open,
	"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo":      Client,
	"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": Client,
}

// LeafRole is the role of the Leaf-style HTTP API (/api/...).
const LeafRole = Client

// noRole is above every role a token can hold: a procedure missing from
// the table is refused.
const noRole = Admin + 1

// Required is the minimum role of procedure ("/pkg.Service/Method").
func Required(procedure string) Role {
	if r, ok := Procedures[procedure]; ok {
		return r
	}
	return noRole
}
